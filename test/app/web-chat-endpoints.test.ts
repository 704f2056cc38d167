import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { type AppUserHandle, signedInUser } from "./app-helpers.ts";

// The endpoints of the app API that only the web chat uses: the models a user picks from, and
// archiving (spec "Chat sessions": archiving exists only in the web chat; archived conversations
// are left out of GET /chat/sessions).

let t: TestApp;
const chat = new FakeOpenAiServer();
let closedPort: number;
beforeAll(async () => {
  const { url } = await chat.start();
  closedPort = await freePort();
  t = await startTestApp({
    config: {
      models: [
        { id: "gemma3.8-27b", kind: "chat", vision: true },
        { id: "gemma3.8-70b", kind: "chat", on_request: true },
        { id: "gemma3.8-4b", kind: "chat" },
        { id: "small-chat", kind: "chat" },
        // Named only by an embedding server, which cannot chat.
        { id: "tei-chat", kind: "chat" },
        { id: "bge-m3", kind: "embedding" },
        { id: "tts-1", kind: "tts" },
      ],
      machines: [
        { name: "gpu-1", zone: "ch-ti", protocol: "openai", url, models: ["gemma3.8-27b", "gemma3.8-70b"] },
        // Nothing listens there: its first request is refused, which marks it down.
        {
          name: "gpu-gone",
          zone: "ch-ti",
          protocol: "openai",
          url: `http://127.0.0.1:${closedPort}`,
          models: ["small-chat"],
        },
        { name: "tei-1", zone: "ch-ti", protocol: "tei", url, models: ["tei-chat", "bge-m3"] },
      ],
      installation: { zones: [{ id: "ch-ti" }] },
      app: { default_chat_label: "gemma2.5:1.5b" },
    },
  });
});
afterAll(async () => {
  await t.close();
  await chat.close();
});

// biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
async function json(response: Response): Promise<{ status: number; body: any }> {
  return { status: response.status, body: await response.json() };
}

describe("GET /api/v1/web/models lists the chat models a signed-in user may pick", () => {
  it("only chat models, with vision and whether a model served on request is activated; the tiers; a model whose only machine cannot chat is not available, with no machine (app-chat.md)", async () => {
    const user = await signedInUser(t);
    const before = await json(await user.fetch("/web/models"));
    expect(before.status).toBe(200);
    expect(before.body).toEqual({
      data: [
        { id: "gemma3.8-27b", vision: true, available: true, machines: 1 },
        { id: "gemma3.8-70b", vision: false, available: false, machines: 1 },
        { id: "gemma3.8-4b", vision: false, available: false, machines: 0 },
        { id: "small-chat", vision: false, available: true, machines: 1 },
        // Its one machine cannot chat: no machine serves it.
        { id: "tei-chat", vision: false, available: false, machines: 0 },
      ],
      default_model: "gemma2.5:1.5b",
      tiers: ["slow", "medium", "fast", "ludicrous"],
      default_tier: "slow",
    });
    expect((await t.admin("POST", "/models/gemma3.8-70b/activate")).status).toBe(200);
    const after = await json(await user.fetch("/web/models"));
    expect(after.body.data[1]).toMatchObject({ id: "gemma3.8-70b", available: true });
  });

  it("a model that no machine serves, or whose machines are all down, is not available (the picker offers it disabled)", async () => {
    const user = await signedInUser(t);
    const { key } = await t.newKey();
    // A request to the machine that is gone: its connection is refused, its circuit opens.
    const refused = await t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "small-chat", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(refused.status).toBeGreaterThanOrEqual(500);
    const models = (await json(await user.fetch("/web/models"))).body.data as Array<{ id: string }>;
    expect(models.find((model) => model.id === "small-chat")).toEqual({
      id: "small-chat",
      vision: false,
      available: false,
      machines: 1,
    });
    expect(models.find((model) => model.id === "gemma3.8-4b")).toMatchObject({
      available: false,
      machines: 0,
    });
    expect(models.find((model) => model.id === "gemma3.8-27b")).toMatchObject({ available: true });
  });

  it('spec "App API": without a token 401 unauthorized; an unverified user 403 email_unverified', async () => {
    const anonymous = await json(await t.fetch("/api/v1/web/models"));
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe("unauthorized");
    const unverified = await signedInUser(t, { verified: false });
    const refused = await json(await unverified.fetch("/web/models"));
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("email_unverified");
  });
});

describe('spec "Chat sessions": archiving (web chat only) leaves a conversation out of the list, keeps it readable, and brings it back', () => {
  let user: AppUserHandle;
  const ids = async () =>
    ((await (await user.fetch("/chat/sessions")).json()) as Array<{ id: string }>).map((c) => c.id);
  const archivedIds = async () =>
    (
      (await (await user.fetch("/web/chat/sessions/archived")).json()) as { data: Array<{ id: string }> }
    ).data.map((c) => c.id);

  beforeAll(async () => {
    user = await signedInUser(t);
  });

  it("archive -> gone from GET /chat/sessions, listed as archived, still readable; unarchive -> back", async () => {
    const kept = (await json(await user.post("/chat/sessions", { title: "kept" }))).body.id as string;
    const old = (await json(await user.post("/chat/sessions", { title: "old" }))).body.id as string;
    const archived = await json(await user.post(`/web/chat/sessions/${old}/archive`, {}));
    expect(archived.status).toBe(200);
    expect(archived.body).toMatchObject({ id: old, title: "old", archived: true, messages: [] });
    expect(await ids()).toEqual([kept]);
    expect(await archivedIds()).toEqual([old]);
    expect((await user.fetch(`/chat/sessions/${old}`)).status).toBe(200);
    // Archiving twice changes nothing.
    expect((await user.post(`/web/chat/sessions/${old}/archive`, {})).status).toBe(200);
    const back = await json(await user.post(`/web/chat/sessions/${old}/unarchive`, {}));
    expect(back.body).toMatchObject({ id: old, archived: false });
    expect((await ids()).sort()).toEqual([kept, old].sort());
    expect(await archivedIds()).toEqual([]);
  });

  it("another user's conversation, a missing one and a malformed id: the same 404 {message}", async () => {
    const other = await signedInUser(t);
    const theirs = (await json(await other.post("/chat/sessions", { title: "theirs" }))).body.id as string;
    const answers = [];
    for (const id of [theirs, "7d0f1c4e-0000-4000-8000-000000000000", "not-an-id"]) {
      for (const action of ["archive", "unarchive"]) {
        answers.push(await json(await user.post(`/web/chat/sessions/${id}/${action}`, {})));
      }
    }
    for (const answer of answers)
      expect(answer).toEqual({ status: 404, body: { message: "Conversation not found." } });
    expect(
      ((await (await other.fetch("/chat/sessions")).json()) as Array<{ id: string }>).map((c) => c.id),
    ).toEqual([theirs]);
  });
});
