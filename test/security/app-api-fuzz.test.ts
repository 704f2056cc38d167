import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { PASSWORD, TRUSTED_LOOPBACK } from "../app/auth-fixtures.ts";
import { type KbStack, startKbStack } from "../knowledge/kb-stack.ts";
import { FUZZ_SEED, fuzzRuns, hostileBody, isAppError, nearlyValid, parseJson } from "./hostile-values.ts";

// Fixed seed: a failure here is reproduced by running the test again. FUZZ_RUNS raises the count
// (e.g. FUZZ_RUNS=500 npm test -- test/security/app-api-fuzz.test.ts) for a longer search.
const SEED = FUZZ_SEED;
const RUNS = fuzzRuns(25);

/** The JSON endpoints of the app API, with the fields their bodies name. */
const ENDPOINTS: Array<{ method: string; path: string; auth: boolean; valid: Record<string, unknown> }> = [
  {
    method: "POST",
    path: "/auth/login",
    auth: false,
    valid: { email: "a@example.com", password: PASSWORD },
  },
  { method: "POST", path: "/auth/refresh", auth: false, valid: { refresh_token: "zrt_x" } },
  {
    method: "POST",
    path: "/auth/register",
    auth: false,
    valid: { email: "fuzz@example.com", password: PASSWORD, language: "de" },
  },
  { method: "POST", path: "/auth/verify-email", auth: false, valid: { token: "zev_x" } },
  { method: "POST", path: "/auth/forgot-password", auth: false, valid: { email: "a@example.com" } },
  {
    method: "POST",
    path: "/auth/password-reset/confirm",
    auth: false,
    valid: { token: "zpr_x", password: PASSWORD },
  },
  { method: "POST", path: "/auth/logout", auth: true, valid: { refresh_token: "zrt_x" } },
  { method: "POST", path: "/chat/sessions", auth: true, valid: { title: "t", model: "m" } },
  { method: "PATCH", path: "/chat/sessions/{id}", auth: true, valid: { title: "t" } },
  {
    method: "POST",
    path: "/chat/sessions/{id}/messages",
    auth: true,
    valid: { content: "hi", model: "gemma3.8-27b", tier: "slow" },
  },
  { method: "POST", path: "/rag/kb", auth: true, valid: { name: "n", description: "d" } },
  {
    method: "POST",
    path: "/rag/kb/{slug}/chat",
    auth: true,
    valid: { question: "q?", top_k: 3, model: "gemma3.8-27b" },
  },
  { method: "POST", path: "/audio/synthesize", auth: true, valid: { text: "ciao", format: "wav" } },
  { method: "PATCH", path: "/web/me", auth: true, valid: { language: "fr" } },
  { method: "POST", path: "/web/chat/sessions/{id}/archive", auth: true, valid: {} },
];

const FIELDS = [
  "email",
  "password",
  "token",
  "refresh_token",
  "language",
  "title",
  "model",
  "content",
  "tier",
  "backend",
  "name",
  "description",
  "question",
  "top_k",
  "text",
  "voice",
  "format",
];

describe("Hostile input on the app API (spec Errors / Shapes 6): property-based, fixed seed", () => {
  let s: KbStack;
  let conversationId = "";
  let slug = "";

  beforeAll(async () => {
    s = await startKbStack({
      config: { installation: { zones: [{ id: "ch-ti" }], ...TRUSTED_LOOPBACK.installation } },
    });
  }, 60_000);
  afterAll(() => s?.close());

  it.each(
    ENDPOINTS,
  )("$method $path: malformed JSON, wrong types, huge numbers, deep nesting, invalid UTF-8 never give a 500, every error in the app API's shape", async (endpoint) => {
    // Every 20 requests a fresh user with a conversation and a base of its own: the per-user
    // limit (30 a minute, shared by the limited calls) leaves room for every run.
    let user: AppUserHandle | undefined;
    let sent = 0;
    const fresh = async () => {
      user = await s.user();
      conversationId = ((await (await user.post("/chat/sessions", {})).json()) as { id: string }).id;
      slug = await s.createBase(user, `Fuzz ${sent}`);
    };
    await fresh();
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileBody(FIELDS), nearlyValid(endpoint.valid, FIELDS)), async (body) => {
        sent += 1;
        if (sent % 20 === 0) await fresh();
        const path = endpoint.path.replace("{id}", conversationId).replace("{slug}", slug);
        const response = await s.t.fetch(`/api/v1${path}`, {
          method: endpoint.method,
          headers: {
            "content-type": "application/json",
            ...(endpoint.auth ? { authorization: `Bearer ${user?.token}` } : {}),
          },
          body,
        });
        const text = await response.text();
        expect(response.status, text.slice(0, 300)).not.toBe(500);
        if (response.status >= 400) {
          const parsed = parseJson(text);
          // 413 is the one HTML error of the spec (body over 64 MB); nothing here is that large.
          expect(isAppError(parsed), `${response.status} ${text.slice(0, 300)}`).toBe(true);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);
});
