import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessTokens } from "../../src/auth/access-tokens.ts";
import { displayPrefix, generateApiKey } from "../../src/auth/api-key-format.ts";
import { newOpaqueToken } from "../../src/auth/opaque-tokens.ts";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import { mailsTo, newEmail, PASSWORD, postJson, tokenOf } from "../app/auth-fixtures.ts";
import {
  FakeModerationServer,
  FakeOpenAiServer,
  FakePiperServer,
  FakeTeiServer,
  FakeWhisperServer,
} from "../fakes/index.ts";
import { type CapturedLogs, captureLogs } from "../helpers/log-capture.ts";
import { CANARY, type LeakKind, scanLogText, testSecrets, withCanary } from "../helpers/log-scan.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import { toneWav } from "../media/wav-fixtures.ts";
import { closeRun } from "./global-setup.ts";

const TEST_ROOT = join(import.meta.dirname, "..");
const line = (fields: Record<string, unknown>) =>
  JSON.stringify({ level: 30, time: 1, service: "zona", request_id: "req_0123456789abcdef", ...fields });

// "Tests that must exist": no secret or prompt in any log line of the whole test suite.
// First the scanner the global teardown runs: it must find a planted leak of each kind.
describe("the log scanner finds a planted leak of each kind", () => {
  const key = generateApiKey();
  const access = new AccessTokens(Buffer.alloc(32, 7)).sign("account-1", new Date(), 900);
  const planted: Array<[string, string, LeakKind]> = [
    ["an API key in a field", line({ key }), "api key"],
    ["an API key inside a message", line({ msg: `could not check ${key} now` }), "api key"],
    ["a bearer value", line({ headers: { authorization: "Bearer abcdefghijklmnop0123" } }), "bearer value"],
    ["an access token of the app API", line({ token: access }), "access token"],
    [
      "a JWT-like access token",
      line({ jwt: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig" }),
      "access token",
    ],
    ["a refresh token", line({ refresh_token: newOpaqueToken("zrt_") }), "refresh token"],
    [
      "an email verification token",
      line({ link: `https://x/verify?token=${newOpaqueToken("zev_")}` }),
      "mailed token",
    ],
    ["a password reset token", line({ token: newOpaqueToken("zpr_") }), "mailed token"],
    ["the admin token of the test apps", line({ admin: ADMIN_TOKEN }), "known secret"],
    ["a password the tests use", line({ body: { password: PASSWORD } }), "known secret"],
    ["a user's text (canary) in a prompt", line({ prompt: withCanary("Tell me") }), "user text (canary)"],
    [
      "a user's text (canary) in an upstream message",
      line({ err: { message: `bad input: ${CANARY}` } }),
      "user text (canary)",
    ],
    [
      "a user's text (canary) an engine repeated in its error",
      line({
        msg: "upstream attempt failed",
        reason: `the upstream answered 400: bad request: {"messages":[{"role":"user","content":"${CANARY}"}]}`,
      }),
      "user text (canary)",
    ],
  ];
  let secrets: string[];
  beforeAll(async () => {
    secrets = await testSecrets(TEST_ROOT);
  });

  it.each(planted)("finds %s (%s)", (_name, text, kind) => {
    const findings = scanLogText(`${line({ msg: "request" })}\n${text}\n`, secrets, "planted.ndjson");
    expect(findings.map((f) => [f.file, f.line, f.kind])).toEqual([["planted.ndjson", 2, kind]]);
  });

  const clean: Array<[string, string]> = [
    [
      "a shortened key as the service shows it",
      line({ msg: `Incorrect API key provided: ${displayPrefix(key)}` }),
    ],
    ["a redacted authorization header", line({ req: { headers: { authorization: "[redacted]" } } })],
    [
      "the service's own advice on the header",
      line({ msg: "Use Authorization: Bearer sk-... or Bearer <ZONA_ADMIN_TOKEN>" }),
    ],
    [
      "words that end in sk- and ids",
      line({ path: "/v1/task-0123456789abcdefghij0123456789abcdefghij0123", id: "zat" }),
    ],
    [
      "an ordinary access line",
      line({ msg: "request", method: "POST", path: "/v1/chat/completions", status: 200 }),
    ],
  ];
  it.each(clean)("leaves alone %s", (_name, text) => {
    expect(scanLogText(text, secrets)).toEqual([]);
  });

  it("its report shows where a secret is, not the secret", () => {
    const [finding] = scanLogText(line({ key }), secrets);
    expect(finding?.excerpt).toContain("sk-");
    expect(finding?.excerpt).not.toContain(key.slice(0, 12));
  });

  it("knows the passwords and operator tokens of the tests from their source", () => {
    expect(secrets).toEqual(expect.arrayContaining([ADMIN_TOKEN, PASSWORD, "secret-password-41"]));
  });

  it("the run's teardown fails the run (exit code 1), naming file and line, and removes the folder", async () => {
    const folder = await mkdtemp(join(tmpdir(), "zona-test-logs-planted-"));
    await writeFile(
      join(folder, "a.test.ts.1.ndjson"),
      `${line({ msg: "request" })}\n${line({ prompt: CANARY })}\n`,
    );
    const before = process.exitCode;
    try {
      await expect(closeRun(folder)).rejects.toThrow(
        /1 log line.*\n.*a\.test\.ts\.1\.ndjson:2: user text \(canary\)/,
      );
      expect(process.exitCode).toBe(1);
    } finally {
      process.exitCode = before;
    }
    expect((await readdir(tmpdir())).includes(folder.split("/").at(-1) as string)).toBe(false);
  });

  it("a clean run's teardown passes and removes the folder", async () => {
    const folder = await mkdtemp(join(tmpdir(), "zona-test-logs-clean-"));
    await writeFile(join(folder, "b.test.ts.1.ndjson"), `${line({ msg: "request" })}\n`);
    await closeRun(folder);
    expect((await readdir(tmpdir())).includes(folder.split("/").at(-1) as string)).toBe(false);
  });
});

// Then traffic on every surface, users' texts carrying the canary, keys, tokens and a password
// sent for real, the failure paths included: every line the app logs, from trace on, is clean.
describe("a real traffic run with canaries leaves no secret or user's text in the log", () => {
  const chat = new FakeOpenAiServer();
  const tei = new FakeTeiServer();
  const zoneWhisper = new FakeWhisperServer();
  const fallbackWhisper = new FakeWhisperServer();
  const piper = new FakePiperServer();
  const moderation = new FakeModerationServer();
  const fakes = [chat, tei, zoneWhisper, fallbackWhisper, piper, moderation];
  let t: TestApp;
  let logs: CapturedLogs;

  beforeAll(async () => {
    const [c, e, z, f, p, m] = await Promise.all(fakes.map((fake) => fake.start()));
    logs = captureLogs("trace");
    t = await startTestApp({
      logger: logs.logger,
      config: {
        installation: {
          zones: [{ id: "ch-ti" }],
          fallback_zone: "ch-fallback",
          trusted_networks: ["127.0.0.0/8"],
        },
        models: [
          { id: "gemma3.8-27b", kind: "chat" },
          { id: "bge-m3", kind: "embedding" },
          { id: "bge-reranker-v2-m3", kind: "rerank" },
          { id: "asr-1", kind: "asr" },
          { id: "asr-1-hd", kind: "asr" },
          { id: "tts-1", kind: "tts" },
        ],
        machines: [
          { name: "ti-chat", zone: "ch-ti", protocol: "openai", url: c?.url, models: ["gemma3.8-27b"] },
          {
            name: "ti-tei",
            zone: "ch-ti",
            protocol: "tei",
            url: e?.url,
            models: ["bge-m3", "bge-reranker-v2-m3"],
          },
          { name: "ti-whisper", zone: "ch-ti", protocol: "whisper", url: z?.url, models: ["asr-1"] },
          {
            name: "ch-whisper",
            zone: "ch-fallback",
            protocol: "whisper",
            url: f?.url,
            models: ["asr-1", "asr-1-hd"],
          },
          { name: "ch-piper", zone: "ch-fallback", protocol: "piper", url: p?.url, models: ["tts-1"] },
          { name: "ch-moderation", zone: "ch-fallback", protocol: "moderation", url: m?.url },
        ],
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all(fakes.map((fake) => fake.close()));
  });

  it("chat, completions, responses, embeddings, rerank, speech, transcription, app sign-in and chat: no finding", async () => {
    const { key } = await t.newKey();
    const asKey = (path: string, body: unknown) =>
      t.fetch(path, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const messages = [{ role: "user", content: withCanary("Tell me about Lugano") }];
    const calls: Array<() => Promise<Response>> = [
      () => asKey("/v1/chat/completions", { model: "gemma3.8-27b", messages }),
      () => asKey("/v1/chat/completions", { model: "gemma3.8-27b", messages, stream: true }),
      () => asKey("/v1/chat/completions", { model: "gemma3.8-27b", messages, temperature: 9 }),
      () => asKey("/v1/completions", { model: "gemma3.8-27b", prompt: withCanary("Once upon") }),
      () => asKey("/v1/responses", { model: "gemma3.8-27b", input: withCanary("Respond") }),
      () => asKey("/v1/embeddings", { model: "bge-m3", input: [withCanary("alpha"), "beta"] }),
      () =>
        asKey("/v1/rerank", {
          query: withCanary("red apple"),
          documents: ["a red apple", withCanary("pie")],
        }),
      () => asKey("/v1/audio/speech", { model: "tts-1", voice: "paola", input: withCanary("Ciao a tutti") }),
      () => transcribe(key, { prompt: withCanary("Lugano, Ceresio") }),
      () => transcribe(key, {}),
    ];
    for (const call of calls) await (await call()).arrayBuffer();

    // The failure paths: the engines answer errors, with the user's text in the request.
    for (const fake of fakes) await fake.setMode("error500");
    for (const call of calls) await (await call()).arrayBuffer();
    // Engines whose errors repeat the request (vLLM's validation errors quote the input), before
    // the answer and in the middle of a stream.
    const echoes = [
      { mode: "error500", errorEcho: "json", errorStatus: 400 },
      { mode: "error500", errorEcho: "text", errorStatus: 500 },
      { mode: "errorMidStream", errorEcho: "json", errorStatus: 500 },
    ] as const;
    for (const { mode, ...settings } of echoes) {
      for (const fake of fakes) await fake.setMode(mode, settings);
      for (const call of calls) await (await call()).arrayBuffer();
    }
    for (const fake of fakes) await fake.setMode("normal", { errorEcho: "none", errorStatus: 500 });

    // The app API: register with a password, the mailed link, login, refresh, a chat, logout.
    const email = newEmail("log-scan");
    const registered = await postJson(t, "/auth/register", { email, password: PASSWORD });
    expect(registered.status).toBe(201);
    const [mail] = await mailsTo(t, email);
    await postJson(t, "/auth/verify-email", { token: tokenOf(mail?.body ?? "", "verify-email") });
    const session = (await (
      await postJson(t, "/auth/login", { email, password: PASSWORD })
    ).json()) as LoginResponse;
    const wrong = await postJson(t, "/auth/login", { email, password: `${PASSWORD} wrong` });
    expect(wrong.status).toBe(401);
    const next = (await (
      await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token })
    ).json()) as LoginResponse;
    await postJson(t, "/auth/refresh", { refresh_token: session.refresh_token }); // reuse of a retired token
    const conversation = (await (await postJson(t, "/chat/sessions", {}, next.access_token)).json()) as {
      id: string;
    };
    const answer = await postJson(
      t,
      `/chat/sessions/${conversation.id}/messages`,
      { content: withCanary("Buongiorno"), model: "gemma3.8-27b" },
      next.access_token,
    );
    expect(answer.status).toBe(200);
    await answer.text();
    await postJson(t, "/auth/logout", { refresh_token: next.refresh_token }, next.access_token);
    await t.app.services.jobs.idle();

    const text = logs.raw.join("\n");
    // The scan saw the traffic: every surface's access line is there.
    for (const path of [
      "/v1/chat/completions",
      "/v1/rerank",
      "/v1/audio/transcriptions",
      "/api/v1/auth/login",
    ]) {
      expect(text).toContain(`"path":"${path}"`);
    }
    const secrets = [
      ...(await testSecrets(TEST_ROOT)),
      key,
      session.access_token,
      session.refresh_token,
      next.access_token,
      next.refresh_token,
    ];
    expect(scanLogText(text, secrets)).toEqual([]);
  });

  function transcribe(key: string, fields: Record<string, string>): Promise<Response> {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append("file", new Blob([new Uint8Array(toneWav({ dbfs: -20, seconds: 1 }))]), "a.wav");
    return t.fetch("/v1/audio/transcriptions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
  }
});
