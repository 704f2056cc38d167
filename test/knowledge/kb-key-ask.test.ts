/**
 * `POST /v1/knowledge-bases/{slug}/ask` over real HTTP (spec "Summary (key API)", the knowledge-base
 * paragraph of "Text generation parameters", "Errors", "Charging and reporting", "Rate limits";
 * payloads in docs/knowledge-bases.md), with word embeddings, so the passage that answers comes first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { documentFixture, type KbStack, startKbStack } from "./kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
type Json = any;
interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: Json;
}

// The machines are in ch-ti only; ch-zh is a zone of the installation with no machine.
const CONFIG = {
  installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }] },
  tiers: {
    slow: { multiplier: 1, requests_per_minute: 100_000 },
    medium: { multiplier: 2, requests_per_minute: 100_000 },
  },
  // small-chat first: the default must be the `…3.8-27b` model, not the catalogue's first chat model.
  models: [
    { id: "small-chat", kind: "chat" },
    {
      id: "gemma3.8-27b",
      kind: "chat",
      prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 },
    },
    { id: "bge-m3", kind: "embedding" },
    { id: "bge-reranker-v2-m3", kind: "rerank" },
  ],
};

describe('spec "Text generation parameters" (knowledge-base ask: question up to 2,000 characters, top_k 1 to 20, out of range 422, other fields ignored; chat model prices): POST /v1/knowledge-bases/{slug}/ask (key API)', () => {
  let stack: KbStack;
  let alice: AppUserHandle;
  let bob: AppUserHandle;
  let all: string; // two-pages.pdf, notes.md, headings.docx, notes.txt
  let pdfId: string;
  let passages = 0;
  let empty: string;
  let failedOnly: string;
  let bobPrivate: string;
  let bobShared: string;

  const keyOf = (user: AppUserHandle, options: Record<string, unknown> = {}) =>
    stack.keyOf(user.accountId, options);
  const call = async (key: string, path: string, init: RequestInit = {}): Promise<Answer> => {
    const response = await stack.t.fetch(path, {
      ...init,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: text ? JSON.parse(text) : undefined,
    };
  };
  const ask = (key: string, slug: string, body: unknown, headers: Record<string, string> = {}) =>
    call(key, `/v1/knowledge-bases/${slug}/ask`, { method: "POST", body: JSON.stringify(body), headers });
  const chatCompletion = (key: string, model = "gemma3.8-27b") =>
    call(key, "/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Hi" }] }),
    });
  const usageOf = async (keyId: string): Promise<Json[]> => {
    await stack.t.app.services.billing.drain();
    return (await stack.t.admin("GET", `/usage?key_id=${keyId}`)).body.data;
  };
  const ready = async (user: AppUserHandle, slug: string, fixture: string) => {
    const document = await stack.ingest(user, slug, documentFixture(fixture), fixture);
    expect(document.status).toBe("ready");
    passages += slug === all ? document.passages : 0;
    return document;
  };

  // Seven documents are read, each in a process of its own: on a busy 2-core machine that took over
  // a minute (under 2 s on a quiet one).
  beforeAll(async () => {
    stack = await startKbStack({ config: CONFIG });
    [alice, bob] = await Promise.all([stack.user(), stack.user()]);
    all = await stack.createBase(alice, "Everything");
    pdfId = (await ready(alice, all, "two-pages.pdf")).id;
    for (const fixture of ["notes.md", "headings.docx", "notes.txt"]) await ready(alice, all, fixture);
    empty = await stack.createBase(alice, "Empty");
    failedOnly = await stack.createBase(alice, "Failed only");
    const scan = await stack.ingest(alice, failedOnly, documentFixture("scanned.pdf"), "scan.pdf");
    expect(scan.status).toBe("failed");
    bobPrivate = await stack.createBase(bob, "Bob private");
    await ready(bob, bobPrivate, "notes.md");
    bobShared = await stack.createBase(bob, "Bob shared");
    await ready(bob, bobShared, "two-pages.pdf");
    expect((await stack.t.admin("POST", `/knowledge-bases/${bobShared}/share`)).status).toBe(200);
  }, 180_000);
  afterAll(() => stack?.close());

  it("answers {object: knowledge_base.answer, knowledge_base, model, answer, sources, usage} with X-Zona; a glacier question finds page 2 of the PDF first", async () => {
    const { key } = await keyOf(alice);
    const question = "How do glaciers carve valleys and leave moraines?";
    const answer = await ask(key, all, { question });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("ch-ti");
    expect(answer.body).toEqual({
      object: "knowledge_base.answer",
      knowledge_base: all,
      model: "gemma3.8-27b",
      answer: `echo: ${question}`,
      sources: expect.any(Array),
      usage: {
        prompt_tokens: expect.any(Number),
        completion_tokens: expect.any(Number),
        total_tokens: answer.body.usage.prompt_tokens + answer.body.usage.completion_tokens,
      },
    });
    const [first] = answer.body.sources;
    expect(first).toEqual({
      index: 1,
      document: "two-pages.pdf",
      document_id: pdfId,
      page: 2,
      section: null,
      passage: expect.stringMatching(/moraines/),
      score: expect.any(Number),
    });
    expect(answer.body.sources.map((source: Json) => source.index)).toEqual([1, 2, 3, 4, 5]);
    // The model was given the numbered passages and the question.
    const sent = stack.chat.lastRequest.body as Json;
    expect(sent.model).toBe("gemma3.8-27b");
    expect(sent.messages.at(-1)).toEqual({ role: "user", content: question });
    expect(sent.messages[0].content).toContain(`[1] (two-pages.pdf, page 2)\n${first.passage}`);
  });

  const within = (heading: string) => expect.stringContaining(heading);
  it.each([
    ["the PDF's page 1", "What is the Fresnel lens?", { document: "two-pages.pdf", page: 1, section: null }],
    [
      "a DOCX section",
      "What do leafcutter ants grow?",
      { document: "headings.docx", section: within("Leafcutter") },
    ],
    [
      "a Markdown section",
      "When do spring tides come?",
      { document: "notes.md", section: within("Spring and neap") },
    ],
  ])("the passage that answers comes first: %s", async (_, question, expected) => {
    const answer = await ask((await keyOf(alice)).key, all, { question });
    expect(answer.status).toBe(200);
    expect(answer.body.sources[0]).toMatchObject(expected);
  });

  it("top_k caps the sources (default 5); 1, 2 and 20 (all the base has)", async () => {
    const { key } = await keyOf(alice);
    expect(passages).toBeGreaterThan(5);
    const count = async (body: Record<string, unknown>) =>
      (await ask(key, all, { question: "glaciers tides bees bread", ...body })).body.sources.length;
    expect(await count({})).toBe(5);
    expect(await count({ top_k: 1 })).toBe(1);
    expect(await count({ top_k: 2 })).toBe(2);
    expect(await count({ top_k: 20 })).toBe(Math.min(20, passages));
  });

  it("model: the catalogue's …3.8-27b chat model by default, small-chat when asked", async () => {
    const { key } = await keyOf(alice);
    const asked = await ask(key, all, { question: "Bread?", model: "small-chat" });
    expect(asked.status).toBe(200);
    expect(asked.body.model).toBe("small-chat");
    expect((stack.chat.lastRequest.body as Json).model).toBe("small-chat");
  });

  it("a model the catalogue lacks -> 404 model_not_found as chat completions answer it; not a chat model (bge-m3) -> 404 too; before anything is embedded or charged", async () => {
    const { key, keyId } = await keyOf(alice);
    const embeds = stack.tei.requestsTo("/embed").length;
    const answer = await ask(key, all, { question: "Bread?", model: "no-such-model" });
    expect(answer.status).toBe(404);
    expect(answer.body.error).toMatchObject({ type: "model_not_found", code: "model_not_found" });
    const chat = await chatCompletion(key, "no-such-model");
    expect(chat.status).toBe(404);
    expect({ ...answer.body.error, request_id: null }).toEqual({ ...chat.body.error, request_id: null });
    const embedding = await ask(key, all, { question: "Bread?", model: "bge-m3" });
    expect(embedding.status).toBe(404);
    expect(embedding.body.error).toMatchObject({ type: "model_not_found", code: "model_not_found" });
    expect(stack.tei.requestsTo("/embed").length).toBe(embeds);
    expect(await usageOf(keyId)).toEqual([]);
  });

  const emoji = "🧊";
  const invalid: Array<[string, unknown, string]> = [
    ["question missing", {}, "question"],
    ["question empty", { question: "" }, "question"],
    ["question blank", { question: "   " }, "question"],
    ["question not a string", { question: 42 }, "question"],
    ["question a list", { question: ["Bread?"] }, "question"],
    ["question of 2,001 characters", { question: "a".repeat(2001) }, "question"],
    ["question of 2,001 emoji (characters, not UTF-16 units)", { question: emoji.repeat(2001) }, "question"],
    ["top_k 0", { question: "Bread?", top_k: 0 }, "top_k"],
    ["top_k 21", { question: "Bread?", top_k: 21 }, "top_k"],
    ["top_k 1.5", { question: "Bread?", top_k: 1.5 }, "top_k"],
    ['top_k "5"', { question: "Bread?", top_k: "5" }, "top_k"],
    ["model not a string", { question: "Bread?", model: 42 }, "model"],
    ["a body that is not an object", ["Bread?"], "question"],
  ];
  it.each(invalid)("422 in the chat-validation shape: %s", async (_title, body, param) => {
    const answer = await ask((await keyOf(alice)).key, all, body);
    expect(answer.status).toBe(422);
    expect(answer.body).toEqual({
      error: {
        message: expect.any(String),
        type: "invalid_request_error",
        code: "invalid_value",
        param,
        request_id: answer.headers.get("x-request-id"),
      },
      message: answer.body.error.message,
      errors: { [param]: [expect.any(String)] },
    });
  });

  it("422 lists every field at fault in errors; param is the first", async () => {
    const answer = await ask((await keyOf(alice)).key, all, { question: "", top_k: 0, model: 7 });
    expect(answer.status).toBe(422);
    expect(answer.body.error.param).toBe("question");
    expect(Object.keys(answer.body.errors).sort()).toEqual(["model", "question", "top_k"]);
  });

  it("a question of 2,000 characters passes, also 2,000 emoji; top_k 1 and 20 pass", async () => {
    const { key } = await keyOf(alice);
    for (const body of [
      { question: "a".repeat(2000) },
      { question: emoji.repeat(2000) },
      { question: "Bread?", top_k: 1 },
      { question: "Bread?", top_k: 20 },
    ]) {
      expect((await ask(key, all, body)).status).toBe(200);
    }
  });

  it("other fields are ignored (temperature, stream, max_tokens, foo): 200, a whole JSON answer", async () => {
    const answer = await ask((await keyOf(alice)).key, all, {
      question: "Bread?",
      temperature: 9,
      stream: true,
      max_tokens: 1,
      foo: "bar",
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
    expect(answer.body.object).toBe("knowledge_base.answer");
    const sent = stack.chat.lastRequest.body as Json;
    expect(sent.stream).not.toBe(true);
    expect(sent.temperature).toBeUndefined();
    expect(sent.foo).toBeUndefined();
  });

  it("a base that does not exist and another account's private base: the same 404; a shared base of another account: 200", async () => {
    const { key } = await keyOf(alice);
    const answers = await Promise.all(
      ["no-such-base", bobPrivate, "Not%20A%20Slug"].map((slug) => ask(key, slug, { question: "Tides?" })),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect({ ...answer.body.error, request_id: null }).toEqual({
        ...(answers[0] as Answer).body.error,
        request_id: null,
      });
    }
    const shared = await ask(key, bobShared, { question: "Where do glaciers form?" });
    expect(shared.status).toBe(200);
    expect(shared.body.knowledge_base).toBe(bobShared);
    expect(shared.body.sources[0]).toMatchObject({ document: "two-pages.pdf", page: 2 });
  });

  it("409 knowledge_base_not_ready for the key's own base without a ready document (empty, or only a failed one); neither is listed", async () => {
    const { key } = await keyOf(alice);
    for (const slug of [empty, failedOnly]) {
      const answer = await ask(key, slug, { question: "Anything?" });
      expect(answer.status).toBe(409);
      expect(answer.body.error).toMatchObject({ code: "knowledge_base_not_ready" });
    }
    const listed = (await call(key, "/v1/knowledge-bases")).body.data.map((base: Json) => base.id);
    expect(listed).toContain(all);
    expect(listed).not.toContain(empty);
    expect(listed).not.toContain(failedOnly);
  });

  it("/v1/rag/kb and /v1/rag/anything do not exist: 404 unknown_endpoint", async () => {
    const { key } = await keyOf(alice);
    for (const [method, path] of [
      ["GET", "/v1/rag/kb"],
      ["POST", "/v1/rag/kb"],
      ["GET", "/v1/rag/anything"],
      ["POST", `/v1/rag/kb/${all}/chat`],
    ] as const) {
      const answer = await call(key, path, { method, ...(method === "POST" ? { body: "{}" } : {}) });
      expect(answer.status).toBe(404);
      expect(answer.body.error).toMatchObject({ code: "unknown_endpoint" });
    }
  });

  it("billing: one knowledge_bases.ask record (the request's id) at the chat model's prices × the tier (slow 1, medium 2), plus the question's knowledge_bases.embed record", async () => {
    const { key, keyId } = await keyOf(alice);
    const question = "How do glaciers carve valleys?";
    const slow = await ask(key, all, { question });
    const medium = await ask(key, all, { question }, { "x-service-tier": "medium" });
    expect([slow.status, medium.status]).toEqual([200, 200]);
    const records = await usageOf(keyId);
    for (const [answer, multiplier] of [
      [slow, 1],
      [medium, 2],
    ] as const) {
      const id = answer.headers.get("x-request-id") as string;
      const mine = records.filter((record) => record.request_id.startsWith(id));
      const asks = mine.filter((record) => record.endpoint === "knowledge_bases.ask");
      expect(asks).toHaveLength(1);
      expect(asks[0].request_id).toBe(id);
      const { prompt_tokens: input, completion_tokens: output } = answer.body.usage;
      expect(asks[0]).toMatchObject({
        model: "gemma3.8-27b",
        units: { input_tokens: input, output_tokens: output },
        outcome: "ok",
        zone: "ch-ti",
      });
      expect(asks[0].cost).toBeCloseTo(((input * 1 + output * 2) * multiplier) / 1_000_000, 9);
      expect(mine.filter((record) => record.endpoint === "knowledge_bases.embed")).toMatchObject([
        { model: "bge-m3", outcome: "ok" },
      ]);
      expect(mine.map((record) => record.endpoint).sort()).toEqual([
        "knowledge_bases.ask",
        "knowledge_bases.embed",
        "knowledge_bases.rerank",
      ]);
    }
  });

  it("spec \"Errors\" 402: a monthly limit too small for the answer's highest possible cost -> spending_limit_reached before anything is sent to a model (not even the question's embedding), nothing charged", async () => {
    const { key, keyId } = await keyOf(alice, { monthly_limit: 0.01 });
    const chats = stack.chat.requests.length;
    const embeddings = stack.tei.requests.length;
    const answer = await ask(key, all, { question: "Where do glaciers form?" });
    expect(answer.status).toBe(402);
    expect(answer.body.error).toMatchObject({ code: "spending_limit_reached" });
    expect(stack.chat.requests.length).toBe(chats);
    expect(stack.tei.requests.length).toBe(embeddings);
    const records = await usageOf(keyId);
    expect(records.filter((record) => record.endpoint === "knowledge_bases.ask")).toEqual([]);
    const summary = (await stack.t.admin("GET", `/usage/summary?key_id=${keyId}`)).body;
    expect(summary).toMatchObject({ cost: 0, key_spend: { spent: 0, reserved: 0 } });
    // A limit that holds the highest possible cost answers, and spends exactly the answer's cost.
    const roomy = await keyOf(alice, { monthly_limit: 1 });
    const answered = await ask(roomy.key, all, { question: "Tides?" });
    expect(answered.status).toBe(200);
    const asks = (await usageOf(roomy.keyId)).filter((record) => record.endpoint === "knowledge_bases.ask");
    expect(asks).toMatchObject([{ request_id: answered.headers.get("x-request-id"), outcome: "ok" }]);
    const spend = (await stack.t.admin("GET", `/usage/summary?key_id=${roomy.keyId}`)).body.key_spend;
    expect(spend).toMatchObject({ reserved: 0, monthly_limit: 1 });
    expect(spend.spent).toBeCloseTo(asks[0].cost, 9);
    expect(spend.spent).toBeGreaterThan(0);
  });

  it("runs in the installation's zones: a key restricted to ch-zh (no machine) is answered from ch-ti, where its chat completion is 503 zone_unavailable", async () => {
    const { key } = await keyOf(alice, { zones: ["ch-zh"] });
    const answer = await ask(key, all, { question: "Where do glaciers form?" });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("ch-ti");
    const chat = await chatCompletion(key);
    expect(chat.status).toBe(503);
    expect(chat.body.error).toMatchObject({ type: "zone_unavailable" });
  });

  it("rate limit: 30 asks a minute on the shared counter; the 31st is 429 Too Many Attempts., and chat completions of the key pass only up to their own 60", async () => {
    const { key } = await keyOf(alice);
    for (let i = 1; i <= 30; i++) {
      const answer = await ask(key, all, { question: "Bread?", top_k: 1 });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-ratelimit-limit")).toBe("30");
      expect(answer.headers.get("x-ratelimit-remaining")).toBe(String(30 - i));
    }
    const refused = await ask(key, all, { question: "Bread?" });
    expect(refused.status).toBe(429);
    expect(refused.text).toBe('{"message":"Too Many Attempts."}');
    expect(refused.headers.get("x-ratelimit-limit")).toBe("30");
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // The shared counter holds 30 (the refused ask counts toward nothing): chat completions have 30 left of 60.
    for (let i = 31; i <= 60; i++) {
      const chat = await chatCompletion(key);
      expect(chat.status).toBe(200);
      expect(chat.headers.get("x-ratelimit-limit")).toBe("60");
      expect(chat.headers.get("x-ratelimit-remaining")).toBe(String(60 - i));
    }
    const chatRefused = await chatCompletion(key);
    expect(chatRefused.status).toBe(429);
    expect(chatRefused.text).toBe('{"message":"Too Many Attempts."}');
    expect(chatRefused.headers.get("x-ratelimit-limit")).toBe("60");
    // Embeddings (120) still have room on the same counter.
    const embedding = await call(key, "/v1/embeddings", {
      method: "POST",
      body: JSON.stringify({ model: "bge-m3", input: "glacier" }),
    });
    expect(embedding.status).toBe(200);
    expect(embedding.headers.get("x-ratelimit-remaining")).toBe(String(120 - 61));
  });
});
