import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/database.ts";
import { conversationMessages, conversations } from "../../src/store/schema.ts";
import { startTestApp } from "../helpers/test-app.ts";
import { openTestStore, STORE_KINDS } from "../helpers/test-store.ts";
import { type AppUserHandle, signedInUser } from "./app-helpers.ts";
import {
  CHAT_MODEL,
  type ChatStack,
  echoOf,
  MESSAGE_FIELDS,
  newConversation,
  readConversation,
  sendMessage,
  startChatStack,
} from "./chat-stack.ts";

// ISO 8601 with an explicit offset.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(STORE_KINDS)("Chat sessions (app API) on %s", (kind) => {
  let s: ChatStack;
  let user: AppUserHandle;

  beforeAll(async () => {
    s = await startChatStack({ store: kind });
    user = await signedInUser(s.t);
  });
  afterAll(() => s.close());

  it("full flow: create (201) -> send (stream) -> list -> get -> rename -> delete (204, messages too)", async () => {
    const created = await user.post("/chat/sessions", {});
    expect(created.status).toBe(201);
    const conversation = (await created.json()) as { id: string; title: string };
    expect(conversation.title).toBe("Nuova chat");

    const { events } = await sendMessage(user, conversation.id, {
      content: "Ciao, come stai?",
      model: CHAT_MODEL,
    });
    expect(
      events
        .filter((e) => e.type === "delta")
        .map((e) => e.text)
        .join(""),
    ).toBe(echoOf("Ciao, come stai?"));
    expect(events.at(-1)).toMatchObject({ type: "done", outcome: "ok" });
    await s.jobsIdle();

    const list = await user.fetch("/chat/sessions");
    expect(list.status).toBe(200);
    const listed = (await list.json()) as Array<{ id: string; messages: unknown[] }>;
    expect(listed.find((c) => c.id === conversation.id)?.messages).toEqual([]);

    const read = await readConversation(user, conversation.id);
    expect(read.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ["user", "Ciao, come stai?"],
      ["assistant", echoOf("Ciao, come stai?")],
    ]);
    expect(read.model).toBe(CHAT_MODEL);

    const renamed = await user.post(`/chat/sessions/${conversation.id}`, { title: "Saluti" }, "PATCH");
    expect(renamed.status).toBe(200);
    expect(((await renamed.json()) as { title: string }).title).toBe("Saluti");
    expect((await readConversation(user, conversation.id)).title).toBe("Saluti");

    const deleted = await user.fetch(`/chat/sessions/${conversation.id}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    expect((await user.fetch(`/chat/sessions/${conversation.id}`)).status).toBe(404);
    const left = await s.t.store.db
      .select({ n: sql<number>`count(*)::int` })
      .from(conversationMessages)
      .where(eq(conversationMessages.conversationId, conversation.id));
    expect(left[0]?.n).toBe(0);
  });

  it("Conversation: exactly id, title, model, created_at, updated_at (ISO 8601 with offset), messages", async () => {
    const response = await user.post("/chat/sessions", { title: "Fields", model: "my-label" });
    const body = (await response.json()) as Record<string, string>;
    expect(Object.keys(body).sort()).toEqual([
      "created_at",
      "id",
      "messages",
      "model",
      "title",
      "updated_at",
    ]);
    expect(body).toEqual({
      id: expect.stringMatching(UUID),
      title: "Fields",
      model: "my-label",
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
      messages: [],
    });
    expect(Date.parse(body.created_at ?? "")).toBeGreaterThan(Date.now() - 60_000);
  });

  it("Message: exactly id, role, content, created_at, prompt_tokens, completion_tokens (0 on user messages), latency_ms (0 when read)", async () => {
    const id = await newConversation(user);
    const { events } = await sendMessage(user, id, { content: "Quanto fa due più due?", model: CHAT_MODEL });
    const done = events.at(-1);
    const { messages } = await readConversation(user, id);
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      expect(Object.keys(message).sort()).toEqual(MESSAGE_FIELDS);
      expect(message.id).toMatch(UUID);
      expect(message.created_at).toMatch(TIMESTAMP);
      expect(message.latency_ms).toBe(0);
    }
    expect(messages[0]).toMatchObject({ role: "user", prompt_tokens: 0, completion_tokens: 0 });
    expect(messages[1]).toMatchObject({
      role: "assistant",
      content: echoOf("Quanto fa due più due?"),
      prompt_tokens: done?.prompt_tokens,
      completion_tokens: done?.completion_tokens,
    });
    expect(messages[1].completion_tokens).toBeGreaterThan(0);
  });

  it("Create: model is only a label, default app.default_chat_label; without title the default title", async () => {
    const body = (await (await user.post("/chat/sessions", {})).json()) as { title: string; model: string };
    expect(body.model).toBe(s.t.config.app.default_chat_label);
    expect(body.model).toBe("gemma2.5:1.5b");
    expect(body.title).toBe("Nuova chat");
  });

  it("List: most recent first by updated_at, messages empty, archived ones left out", async () => {
    const other = await signedInUser(s.t);
    const first = await newConversation(other, { title: "first" });
    const second = await newConversation(other, { title: "second" });
    const archived = await newConversation(other, { title: "archived" });
    await s.t.store.db.update(conversations).set({ archived: true }).where(eq(conversations.id, archived));
    let list = (await (await other.fetch("/chat/sessions")).json()) as Array<{ id: string; title: string }>;
    expect(list.map((c) => c.title)).toEqual(["second", "first"]);
    // A message makes a conversation the most recent.
    await sendMessage(other, first, { content: "hi", model: CHAT_MODEL });
    await s.jobsIdle();
    list = (await (await other.fetch("/chat/sessions")).json()) as Array<{ id: string; title: string }>;
    expect(list.map((c) => c.id)).toEqual([first, second]);
    expect(list.every((c) => JSON.stringify((c as { messages?: unknown }).messages) === "[]")).toBe(true);
    // Archived: still readable, only left out of the list.
    expect((await other.fetch(`/chat/sessions/${archived}`)).status).toBe(200);
  });

  it("List: at most 200 conversations, the most recent ones", async () => {
    const many = await signedInUser(s.t);
    const rows = Array.from({ length: 201 }, (_, i) => ({
      accountId: many.accountId,
      title: `c${i}`,
      titleSource: "user",
      model: "label",
      updatedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
    }));
    await s.t.store.db.insert(conversations).values(rows);
    const list = (await (await many.fetch("/chat/sessions")).json()) as Array<{ title: string }>;
    expect(list).toHaveLength(200);
    expect(list[0]?.title).toBe("c200");
    expect(list.at(-1)?.title).toBe("c1");
  });

  describe("404 {message} naming the conversation: another user's, a missing or a malformed id, alike", () => {
    const cases: Array<[string, (owner: string) => string]> = [
      ["another user's", (owner) => owner],
      ["missing", () => "0b9a3a4e-7c1f-4a51-9d39-5d3c2a1b0e9f"],
      ["malformed", () => "not-a-uuid"],
      ["malformed (SQL-looking)", () => "1'%20OR%20'1'='1"],
    ];
    const requests: Array<[string, (u: AppUserHandle, id: string) => Promise<Response>]> = [
      ["GET", (u, id) => u.fetch(`/chat/sessions/${id}`)],
      ["PATCH", (u, id) => u.post(`/chat/sessions/${id}`, { title: "x" }, "PATCH")],
      ["DELETE", (u, id) => u.fetch(`/chat/sessions/${id}`, { method: "DELETE" })],
      [
        "POST messages",
        (u, id) => u.post(`/chat/sessions/${id}/messages`, { content: "x", model: CHAT_MODEL }),
      ],
    ];
    for (const [which, idOf] of cases) {
      for (const [method, call] of requests) {
        it(`${method} of a ${which} conversation`, async () => {
          const owner = await signedInUser(s.t);
          const own = await newConversation(owner, { title: "mine" });
          const response = await call(user, idOf(own));
          expect(response.status).toBe(404);
          expect(response.headers.get("content-type")).toMatch(/^application\/json/);
          expect(await response.json()).toEqual({ message: "Conversation not found." });
          // The owner's conversation is untouched.
          const kept = await readConversation(owner, own);
          expect(kept).toMatchObject({ title: "mine", messages: [] });
        });
      }
    }
  });

  describe("422 validation_error listing the fields in errors", () => {
    const long = (n: number) => "a".repeat(n);
    const cases: Array<[string, string, string, unknown, string[]]> = [
      ["create: title over 255", "POST", "", { title: long(256) }, ["title"]],
      ["create: model over 128", "POST", "", { model: long(129) }, ["model"]],
      ["create: title not a string", "POST", "", { title: 5 }, ["title"]],
      ["rename: title missing", "PATCH", "id", {}, ["title"]],
      ["rename: title empty", "PATCH", "id", { title: "  " }, ["title"]],
      ["rename: title over 255", "PATCH", "id", { title: long(256) }, ["title"]],
      ["send: content empty", "POST", "messages", { content: "", model: CHAT_MODEL }, ["content"]],
      ["send: content blank", "POST", "messages", { content: " \n ", model: CHAT_MODEL }, ["content"]],
      [
        "send: content over 8000",
        "POST",
        "messages",
        { content: long(8001), model: CHAT_MODEL },
        ["content"],
      ],
      [
        "send: content not text",
        "POST",
        "messages",
        { content: [{ type: "text", text: "x" }], model: CHAT_MODEL },
        ["content"],
      ],
      ["send: model missing", "POST", "messages", { content: "hello" }, ["model"]],
      ["send: model not a string", "POST", "messages", { content: "hello", model: 7 }, ["model"]],
      [
        "send: bad tier",
        "POST",
        "messages",
        { content: "hello", model: CHAT_MODEL, tier: "turbo" },
        ["tier"],
      ],
      ["send: nothing", "POST", "messages", {}, ["content", "model"]],
      ["send: not an object", "POST", "messages", [1, 2], ["content", "model"]],
    ];
    for (const [name, method, where, body, fields] of cases) {
      it(name, async () => {
        const id = await newConversation(user);
        const path =
          where === "" ? "/chat/sessions" : `/chat/sessions/${id}${where === "messages" ? "/messages" : ""}`;
        const response = await user.post(path, body, method);
        expect(response.status).toBe(422);
        const error = (await response.json()) as { error: { code: string; message: string }; errors: object };
        expect(error.error.code).toBe("validation_error");
        expect(error.error.message).toEqual(expect.any(String));
        expect(Object.keys(error.errors).sort()).toEqual(fields);
        // Nothing was saved or sent.
        expect((await readConversation(user, id)).messages).toEqual([]);
      });
    }

    it("8000 characters (counted as characters, not bytes) are accepted", async () => {
      const id = await newConversation(user);
      const { events } = await sendMessage(user, id, { content: "è".repeat(8000), model: CHAT_MODEL });
      expect(events.at(-1)).toMatchObject({ type: "done", outcome: "ok" });
      await s.jobsIdle();
    });
  });

  it("needs a signed-in user with a verified email: 401 unauthorized, 403 email_unverified", async () => {
    expect((await s.t.fetch("/api/v1/chat/sessions")).status).toBe(401);
    const unverified = await signedInUser(s.t, { verified: false });
    const response = await unverified.fetch("/chat/sessions");
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("email_unverified");
  });
});

describe("Create rules: without title, the web chat's default title in the installation's language", () => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore();
  });
  afterAll(() => store.close());

  const titles: Array<[string, string]> = [
    ["it", "Nuova chat"],
    ["en", "New chat"],
    ["de", "Neuer Chat"],
    ["fr", "Nouvelle discussion"],
    ["rm", "Nov chat"],
  ];
  it.each(titles)("installation language %s: %s (whatever the user's language)", async (language, title) => {
    const t = await startTestApp({ store, config: { installation: { language } } });
    try {
      const user = await signedInUser(t, { language: language === "en" ? "de" : "en" });
      const body = (await (await user.post("/chat/sessions", {})).json()) as { title: string; model: string };
      expect(body.title).toBe(title);
    } finally {
      await t.close();
    }
  });
});
