import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FAILED_ANSWER } from "../../src/services/chat/chat-exchange.ts";
import { withCanary } from "../helpers/log-scan.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { type AppUserHandle, signedInUser } from "./app-helpers.ts";
import {
  CHAT_MODEL,
  type ChatStack,
  EMBEDDING_MODEL,
  echoOf,
  eventually,
  MESSAGE_FIELDS,
  newConversation,
  readConversation,
  readEvents,
  readWebConversation,
  type StreamEvent,
  sendMessage,
  startChatStack,
} from "./chat-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: assertions check the records' shape
type UsageRecord = Record<string, any>;

describe.each(STORE_KINDS)("Chat sessions: POST /chat/sessions/{id}/messages on %s", (kind) => {
  let s: ChatStack;
  let user: AppUserHandle;

  beforeAll(async () => {
    s = await startChatStack({ store: kind });
    user = await signedInUser(s.t);
  });
  afterAll(() => s.close());
  beforeEach(async () => {
    await s.jobsIdle();
    await s.reset();
  });

  const deltasOf = (events: StreamEvent[]) =>
    events
      .filter((event) => event.type === "delta")
      .map((event) => event.text)
      .join("");

  async function usageRecord(requestId: string | null): Promise<UsageRecord | undefined> {
    const records = await eventually(
      async () =>
        (await s.t.admin("GET", `/usage?account_id=${user.accountId}&limit=100`)).body.data as UsageRecord[],
      (list) => list.some((record) => record.request_id === requestId),
    );
    return records.find((record) => record.request_id === requestId);
  }

  it("Events: `delta` {type, text} pieces, then `done` {prompt_tokens, completion_tokens, latency_ms, outcome, title_job_queued}; 200 text/event-stream with X-Zona", async () => {
    s.alpha.configure({ chunkDelayMs: 20 });
    s.beta.configure({ chunkDelayMs: 20 });
    const id = await newConversation(user);
    const { response, events } = await sendMessage(user, id, {
      content: "one two three four",
      model: CHAT_MODEL,
    });
    expect(response.headers.get("x-zona")).toMatch(/^ch-(ti|zh)$/);
    expect(response.headers.get("x-request-id")).toMatch(/^req_/);
    const deltas = events.slice(0, -1);
    expect(deltas.length).toBe(5); // "echo:", " one", " two", " three", " four"
    for (const delta of deltas) expect(Object.keys(delta).sort()).toEqual(["text", "type"]);
    expect(deltasOf(events)).toBe(echoOf("one two three four"));
    const done = events.at(-1);
    expect(Object.keys(done ?? {}).sort()).toEqual([
      "completion_tokens",
      "latency_ms",
      "outcome",
      "prompt_tokens",
      "title_job_queued",
      "type",
    ]);
    expect(done).toEqual({
      type: "done",
      prompt_tokens: expect.any(Number),
      completion_tokens: 5,
      latency_ms: expect.any(Number),
      outcome: "ok",
      title_job_queued: true,
    });
    expect(done?.prompt_tokens).toBeGreaterThan(0);
    // The time of the whole answer: four pauses of 20 ms between the five pieces at least.
    expect(done?.latency_ms).toBeGreaterThanOrEqual(80);
  });

  it("Chat message: the user message is saved before the answer starts; the conversation's model label becomes the message's model", async () => {
    await s.alpha.setMode("hang");
    await s.beta.setMode("hang");
    const id = await newConversation(user, { model: "a-label" });
    const controller = new AbortController();
    const pending = user
      .fetch(`/chat/sessions/${id}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content: "Are you there?", model: CHAT_MODEL }),
        signal: controller.signal,
      })
      .catch(() => undefined);
    // The machine holds the request without answering: the answer has not started.
    await eventually(
      async () => s.chatRequests().length,
      (n) => n === 1,
    );
    const during = await readConversation(user, id);
    expect(during.messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ["user", "Are you there?"],
    ]);
    expect(during.model).toBe(CHAT_MODEL);
    controller.abort();
    await pending;
    await eventually(
      () => readConversation(user, id),
      (c) => c.messages.length === 2,
    );
  });

  it("the whole history goes to the model every time, oldest first, nothing trimmed (failure texts included)", async () => {
    const id = await newConversation(user);
    const first = "First question about Ticino";
    const second = "Second question about Zurich";
    await sendMessage(user, id, { content: first, model: CHAT_MODEL, backend: "alpha" });
    await s.alpha.setMode("error500");
    await s.beta.setMode("error500");
    await sendMessage(user, id, { content: second, model: CHAT_MODEL });
    await s.reset();
    await sendMessage(user, id, { content: "Third", model: CHAT_MODEL });
    const [request] = s.chatRequests();
    expect(request?.machine).toBe("ti-alpha");
    expect(request?.body.messages).toEqual([
      { role: "user", content: first },
      { role: "assistant", content: echoOf(first) },
      { role: "user", content: second },
      { role: "assistant", content: FAILED_ANSWER },
      { role: "user", content: "Third" },
    ]);
  });

  it("tier: default is the tier of the previous message of the conversation, slow for the first (seen in the price: slow x1, medium x2, fast x4)", async () => {
    const id = await newConversation(user);
    const steps: Array<[string | undefined, number]> = [
      [undefined, 1], // first message: slow
      ["fast", 4],
      [undefined, 4], // the previous message's tier
      ["medium", 2],
      [undefined, 2],
    ];
    for (const [tier, multiplier] of steps) {
      const { response } = await sendMessage(user, id, {
        content: withCanary("price check"),
        model: CHAT_MODEL,
        ...(tier ? { tier } : {}),
      });
      const record = await usageRecord(response.headers.get("x-request-id"));
      const { input_tokens: input, output_tokens: output } = record?.units ?? {};
      const cost = ((input * 1 + output * 2) / 1e6) * multiplier;
      expect(record?.cost).toBeCloseTo(cost, 9);
    }
    // Another conversation starts at slow again.
    const other = await newConversation(user);
    const { response } = await sendMessage(user, other, {
      content: withCanary("price check"),
      model: CHAT_MODEL,
    });
    const record = await usageRecord(response.headers.get("x-request-id"));
    expect(record?.cost).toBeCloseTo((record?.units.input_tokens + record?.units.output_tokens * 2) / 1e6, 9);
  });

  it("backend: the machine family is tried first and remembered for later messages", async () => {
    const id = await newConversation(user);
    const servedBy = async (body: Record<string, unknown>) => {
      const { response } = await sendMessage(user, id, {
        content: "which machine?",
        model: CHAT_MODEL,
        ...body,
      });
      return response.headers.get("x-zona");
    };
    expect(await servedBy({ backend: "beta" })).toBe("ch-zh");
    for (let i = 0; i < 3; i++) expect(await servedBy({})).toBe("ch-zh");
    expect(await servedBy({ backend: "alpha" })).toBe("ch-ti");
    for (let i = 0; i < 3; i++) expect(await servedBy({})).toBe("ch-ti");
    // The answers (streamed); the automatic title of the first exchange asked the preferred family too.
    const answers = (fake: typeof s.alpha) =>
      fake.requestsTo("/v1/chat/completions").filter((r) => (r.body as { stream?: boolean }).stream === true);
    expect(answers(s.beta)).toHaveLength(4);
    expect(answers(s.alpha)).toHaveLength(4);
    // Tried first, not only: when the family's machine is down the answer comes from another.
    await s.alpha.setMode("refuse");
    expect(await servedBy({})).toBe("ch-zh");
    // A family no machine has changes nothing.
    await s.reset();
    const unknown = await sendMessage(user, id, { content: "x", model: CHAT_MODEL, backend: "gamma" });
    expect(unknown.events.at(-1)).toMatchObject({ outcome: "ok" });
  });

  it("the answer is made only in the installation's zones, never moved: all their machines down is zone_unavailable, the fallback zone is not used", async () => {
    await s.alpha.setMode("refuse");
    await s.beta.setMode("refuse");
    const id = await newConversation(user);
    const { events } = await sendMessage(user, id, { content: "anyone?", model: CHAT_MODEL });
    expect(events).toEqual([
      { type: "error", code: "zone_unavailable", message: expect.stringContaining("ch-ti, ch-zh") },
      expect.objectContaining({ type: "done", outcome: "error", prompt_tokens: 0, completion_tokens: 0 }),
    ]);
    expect(s.outside.requests).toHaveLength(0);
    const { messages } = await readConversation(user, id);
    expect(messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ["user", "anyone?"],
      ["assistant", FAILED_ANSWER],
    ]);
  });

  describe("Chat answer: failure before the first token -> assistant message with the fixed text, `error`, then `done` with outcome error", () => {
    const cases: Array<[string, () => Promise<void>, Record<string, unknown>, string]> = [
      [
        "machines refuse connections",
        async () => {
          await s.alpha.setMode("refuse");
          await s.beta.setMode("refuse");
        },
        {},
        "zone_unavailable",
      ],
      [
        "machines answer 500",
        async () => {
          await s.alpha.setMode("error500");
          await s.beta.setMode("error500");
        },
        {},
        "upstream_error",
      ],
      ["a model that does not exist", async () => {}, { model: "no-such-model" }, "upstream_error"],
      ["a model that is not a chat model", async () => {}, { model: EMBEDDING_MODEL }, "upstream_error"],
    ];
    for (const [name, prepare, body, code] of cases) {
      it(`${name}: ${code}`, async () => {
        await prepare();
        const id = await newConversation(user);
        const response = await user.post(`/chat/sessions/${id}/messages`, {
          content: "hello",
          model: CHAT_MODEL,
          ...body,
        });
        expect(response.status).toBe(200);
        const events = await readEvents(response);
        expect(events).toEqual([
          { type: "error", code, message: expect.any(String) },
          {
            type: "done",
            prompt_tokens: 0,
            completion_tokens: 0,
            latency_ms: expect.any(Number),
            outcome: "error",
            title_job_queued: false,
          },
        ]);
        const { messages, title } = await readConversation(user, id);
        expect(messages.map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
          ["user", "hello"],
          ["assistant", FAILED_ANSWER],
        ]);
        expect(messages[1]).toMatchObject({ prompt_tokens: 0, completion_tokens: 0 });
        await s.jobsIdle();
        expect(title).toBe("Nuova chat");
        // Nothing is charged.
        const record = (
          await s.t.admin("GET", `/usage?account_id=${user.accountId}&limit=100`)
        ).body.data.find((r: UsageRecord) => r.request_id === response.headers.get("x-request-id"));
        if (record) expect(record).toMatchObject({ cost: 0, outcome: "failed", endpoint: "app.chat" });
      });
    }
  });

  it("Chat answer: failure mid-answer -> the deltas sent, then `error` upstream_error and `done` error; the assistant message is the fixed text, nothing charged", async () => {
    for (const fake of [s.alpha, s.beta]) await fake.setMode("dropMidStream", { dropAfterChunks: 3 });
    const id = await newConversation(user);
    const response = await user.post(`/chat/sessions/${id}/messages`, {
      content: "a long answer please",
      model: CHAT_MODEL,
    });
    const events = await readEvents(response);
    const deltas = events.filter((event) => event.type === "delta");
    expect(deltas.length).toBeGreaterThan(0);
    expect(events.slice(deltas.length)).toEqual([
      { type: "error", code: "upstream_error", message: expect.any(String) },
      expect.objectContaining({ type: "done", outcome: "error", title_job_queued: false }),
    ]);
    const { messages } = await readConversation(user, id);
    expect(messages[1]).toMatchObject({ role: "assistant", content: FAILED_ANSWER, completion_tokens: 0 });
    const record = await usageRecord(response.headers.get("x-request-id"));
    expect(record).toMatchObject({ outcome: "failed", cost: 0, endpoint: "app.chat" });
  });

  it("closing the connection stops the answer: the machine's stream is closed, what was generated is saved and billed as partial", async () => {
    for (const fake of [s.alpha, s.beta]) fake.configure({ chunks: 60, chunkDelayMs: 25 });
    const id = await newConversation(user);
    const controller = new AbortController();
    const response = await user.fetch(`/chat/sessions/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: "tell me a long story", model: CHAT_MODEL }),
      signal: controller.signal,
    });
    const requestId = response.headers.get("x-request-id");
    const reader = response.body?.getReader();
    let received = "";
    const decoder = new TextDecoder();
    while (reader && (received.match(/"delta"/g) ?? []).length < 3) {
      const { value, done } = await reader.read();
      if (done) break;
      received += decoder.decode(value, { stream: true });
    }
    controller.abort();
    const fake = s.chatRequests()[0]?.machine === "ti-alpha" ? s.alpha : s.beta;
    await eventually(
      async () => fake.abandonedStreams,
      (count) => count === 1,
    );
    expect(fake.abandonedStreams).toBe(1);
    const conversation = await eventually(
      () => readConversation(user, id),
      (c) => c.messages.length === 2,
    );
    const saved: string = conversation.messages[1].content;
    const full = echoOf("tell me a long story");
    expect(saved.length).toBeGreaterThan(0);
    expect(full.startsWith(saved.slice(0, Math.min(saved.length, full.length)))).toBe(true);
    expect(saved.split(" ").length).toBeLessThan(60);
    expect(conversation.messages[1].completion_tokens).toBeGreaterThan(0);
    const record = await usageRecord(requestId);
    expect(record).toMatchObject({ outcome: "partial", endpoint: "app.chat", key_id: null });
    expect(record?.cost).toBeGreaterThan(0);
    // The app API's message keeps the spec's fields; the web chat's read marks the answer stopped.
    for (const message of conversation.messages) expect(Object.keys(message).sort()).toEqual(MESSAGE_FIELDS);
    const web = await readWebConversation(user, id);
    expect(web.messages.map((m: { stopped: boolean }) => m.stopped)).toEqual([false, true]);
    expect(web.messages[1]).toEqual({ ...conversation.messages[1], stopped: true });
  });

  it("closing the connection before any machine answered: nothing generated, an empty assistant message is saved, nothing charged", async () => {
    await s.alpha.setMode("hang");
    await s.beta.setMode("hang");
    const id = await newConversation(user);
    const controller = new AbortController();
    const pending = user
      .fetch(`/chat/sessions/${id}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content: "hello?", model: CHAT_MODEL }),
        signal: controller.signal,
      })
      .catch(() => undefined);
    await eventually(
      async () => s.chatRequests().length,
      (n) => n === 1,
    );
    controller.abort();
    await pending;
    const conversation = await eventually(
      () => readConversation(user, id),
      (c) => c.messages.length === 2,
    );
    expect(conversation.messages[1]).toMatchObject({ role: "assistant", content: "", completion_tokens: 0 });
    expect((await readWebConversation(user, id)).messages[1]).toMatchObject({ content: "", stopped: true });
  });

  it("the web chat's read of a conversation (GET /api/v1/web/chat/sessions/{id}): the app API's messages plus `stopped`, false for whole answers; another user's conversation is 404 as in the app API", async () => {
    // A user of its own: the others' messages a minute stay within the chat limit.
    const owner = await signedInUser(s.t);
    const id = await newConversation(owner);
    await sendMessage(owner, id, { content: "a whole answer", model: CHAT_MODEL });
    await s.jobsIdle();
    const conversation = await readConversation(owner, id);
    for (const message of conversation.messages) expect(Object.keys(message).sort()).toEqual(MESSAGE_FIELDS);
    const web = await readWebConversation(owner, id);
    expect(web).toEqual({
      ...conversation,
      messages: conversation.messages.map((message: object) => ({ ...message, stopped: false })),
    });
    const other = await signedInUser(s.t);
    const foreign = await other.fetch(`/web/chat/sessions/${id}`);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual(await (await other.fetch(`/chat/sessions/${id}`)).json());
  });

  it("billing: the account pays (no key) as for the key API, one usage record app.chat with the tokens of `done`", async () => {
    const id = await newConversation(user);
    const { response, events } = await sendMessage(user, id, { content: "bill me", model: CHAT_MODEL });
    const done = events.at(-1);
    const record = await usageRecord(response.headers.get("x-request-id"));
    expect(record).toMatchObject({
      key_id: null,
      account_id: user.accountId,
      endpoint: "app.chat",
      model: CHAT_MODEL,
      outcome: "ok",
      zone: response.headers.get("x-zona"),
      units: { input_tokens: done?.prompt_tokens, output_tokens: done?.completion_tokens },
    });
    expect(record?.cost).toBeCloseTo((done?.prompt_tokens + done?.completion_tokens * 2) / 1e6, 9);
  });
});
