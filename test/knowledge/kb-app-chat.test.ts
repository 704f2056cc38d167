/**
 * Questions to a knowledge base on the app API over real HTTP (docs/knowledge-bases.md "How a
 * question is answered" and the `chat` events; spec "Events", "Limits", "Rate limits"):
 * `POST /rag/kb/{slug}/chat` streams `sources`, `delta`s and `done`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { eventually, readEvents, type StreamEvent } from "../app/chat-stack.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { documentFixture, type KbStack, startKbStack } from "./kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are checked by assertions, not by types.
type Json = any;

async function json(response: Response): Promise<{ status: number; body: Json }> {
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function ask(user: AppUserHandle, slug: string, body: Record<string, unknown>) {
  const response = await user.post(`/rag/kb/${slug}/chat`, body);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return { response, events: await readEvents(response) };
}

const textOf = (events: StreamEvent[]) =>
  events
    .filter((event) => event.type === "delta")
    .map((event) => event.text)
    .join("");

/** A user with a base holding the PDF, the DOCX and the Markdown fixtures, all ready. */
async function nature(s: KbStack) {
  const user = await s.user();
  const slug = await s.createBase(user, "Nature");
  const documents: Record<string, Json> = {};
  for (const file of ["two-pages.pdf", "headings.docx", "notes.md"]) {
    documents[file] = await s.ingest(user, slug, documentFixture(file), file);
    expect(documents[file].status).toBe("ready");
  }
  return { user, slug, documents };
}

describe('spec "Events" (as chat sessions: delta, error, done; status 200 once started): knowledge-base chat, POST /rag/kb/{slug}/chat', () => {
  let s: KbStack;
  let user: AppUserHandle;
  let slug: string;
  let documents: Record<string, Json>;
  let passages: number;
  beforeAll(async () => {
    s = await startKbStack();
    ({ user, slug, documents } = await nature(s));
    passages = Object.values(documents).reduce((sum, document) => sum + document.passages, 0);
  });
  afterAll(() => s.close());
  beforeEach(async () => {
    await s.chat.setMode("normal");
    s.chat.clearRequests();
    s.tei.clearRequests();
  });

  it("Events: `sources` first, then `delta`s, then `done` with outcome ok; 200 text/event-stream with X-Zona", async () => {
    const { response, events } = await ask(user, slug, { question: "How do glaciers form?" });
    expect(response.headers.get("x-zona")).toBe("ch-ti");
    const [first, ...rest] = events;
    expect(Object.keys(first ?? {}).sort()).toEqual(["sources", "type"]);
    expect(first?.type).toBe("sources");
    expect(first?.sources[0]).toEqual({
      index: 1,
      document: "two-pages.pdf",
      document_id: documents["two-pages.pdf"].id,
      page: 2,
      section: null,
      passage: expect.stringContaining("Glaciers are rivers of ice"),
      score: expect.any(Number),
    });
    expect(first?.sources.map((source: { index: number }) => source.index)).toEqual([1, 2, 3, 4, 5]);
    const deltas = rest.slice(0, -1);
    expect(deltas.length).toBeGreaterThan(0);
    for (const delta of deltas) expect(Object.keys(delta).sort()).toEqual(["text", "type"]);
    expect(textOf(events)).toBe("echo: How do glaciers form?");
    expect(events.at(-1)).toEqual({
      type: "done",
      prompt_tokens: expect.any(Number),
      completion_tokens: deltas.length,
      latency_ms: expect.any(Number),
      outcome: "ok",
    });
    expect(events.at(-1)?.prompt_tokens).toBeGreaterThan(0);
    // The model was given the passages, numbered as the sources, and the question.
    const sent = s.chat.requestsTo("/v1/chat/completions")[0]?.body as Json;
    expect(sent.model).toBe("gemma3.8-27b");
    expect(sent.messages.at(-1)).toEqual({ role: "user", content: "How do glaciers form?" });
    expect(sent.messages[0].content).toContain(`[1] (two-pages.pdf, page 2)\n${first?.sources[0].passage}`);
  });

  it.each([
    ["How does the Fresnel lens of a lighthouse work?", "two-pages.pdf", 1, null],
    ["Where do leafcutter ants grow their fungus?", "headings.docx", null, "Leafcutter ants"],
    ["How do bees make honey from flower nectar?", "headings.docx", null, "Honey"],
    ["When do spring tides and neap tides come?", "notes.md", null, "Spring and neap tides"],
    ["What is swell made of?", "notes.md", null, "Swell"],
  ])("%j: the first source is %s, page %s, section %j", async (question, document, page, section) => {
    const { events } = await ask(user, slug, { question });
    expect(events[0]?.sources[0]).toMatchObject({ document, page, section });
  });

  it.each([
    [1, 1],
    [2, 2],
    [undefined, 5],
    [20, "all"],
  ] as const)("top_k %s gives %s sources, and the model sees only those", async (topK, expected) => {
    const { events } = await ask(user, slug, {
      question: "How do glaciers form?",
      ...(topK === undefined ? {} : { top_k: topK }),
    });
    const sources = events[0]?.sources as unknown[];
    expect(sources).toHaveLength(expected === "all" ? passages : expected);
    const system = (s.chat.lastRequest.body as Json).messages[0].content as string;
    expect(system).toContain(`[${sources.length}] (`);
    expect(system).not.toContain(`[${sources.length + 1}] (`);
  });

  it("a question of 2,000 characters is taken", async () => {
    const question = `How do glaciers form? ${"ice ".repeat(500)}`.slice(0, 2000);
    const { events } = await ask(user, slug, { question });
    expect(events.at(-1)).toMatchObject({ type: "done", outcome: "ok" });
  });

  it.each([
    ["no question", {}, ["question"]],
    ["an empty question", { question: "" }, ["question"]],
    ["a question of 2,001 characters", { question: "a".repeat(2001) }, ["question"]],
    ["a question that is not text", { question: 5 }, ["question"]],
    ["top_k 0", { question: "Ice?", top_k: 0 }, ["top_k"]],
    ["top_k 21", { question: "Ice?", top_k: 21 }, ["top_k"]],
    ['top_k "5"', { question: "Ice?", top_k: "5" }, ["top_k"]],
    ["top_k 2.5", { question: "Ice?", top_k: 2.5 }, ["top_k"]],
    ["both", { top_k: -1 }, ["question", "top_k"]],
  ])("%s: 422 validation_error naming %j; nothing embedded or asked", async (_label, body, fields) => {
    const answer = await json(await user.post(`/rag/kb/${slug}/chat`, body));
    expect(answer).toEqual({
      status: 422,
      body: {
        message: expect.any(String),
        error: { code: "validation_error", message: expect.any(String) },
        errors: Object.fromEntries(fields.map((field) => [field, [expect.any(String)]])),
      },
    });
    expect(s.tei.requests).toHaveLength(0);
    expect(s.chat.requests).toHaveLength(0);
  });

  it("409 knowledge_base_not_ready before any document is ready (none yet; only a failed one)", async () => {
    const owner = await s.user();
    const empty = await s.createBase(owner, "Nothing yet");
    const notReady = {
      status: 409,
      body: { error: { code: "knowledge_base_not_ready", message: expect.any(String) } },
    };
    expect(await json(await owner.post(`/rag/kb/${empty}/chat`, { question: "Ice?" }))).toEqual(notReady);
    const failed = await s.ingest(owner, empty, documentFixture("scanned.pdf"), "scanned.pdf");
    expect(failed.status).toBe("failed");
    expect(await json(await owner.post(`/rag/kb/${empty}/chat`, { question: "Ice?" }))).toEqual(notReady);
    expect(s.chat.requests).toHaveLength(0);
  });

  it.each([
    ["a model the catalogue lacks", "no-such-model"],
    ["a model that is not a chat model", "bge-m3"],
  ])("%s: 404 model_not_found as JSON before the stream; nothing embedded, nothing recorded", async (_label, model) => {
    const response = await user.post(`/rag/kb/${slug}/chat`, { question: "How do glaciers form?", model });
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await json(response)).toEqual({
      status: 404,
      body: { error: { code: "model_not_found", message: expect.stringContaining(model) } },
    });
    expect(s.tei.requests).toHaveLength(0);
    expect(s.chat.requests).toHaveLength(0);
    const usage = await s.t.admin("GET", `/usage?account_id=${user.accountId}&limit=100`);
    const requestId = response.headers.get("x-request-id");
    expect(usage.body.data.filter((record: Json) => record.request_id.startsWith(requestId))).toEqual([]);
  });

  it("another catalogue chat model named in `model` answers", async () => {
    const { events } = await ask(user, slug, { question: "How do glaciers form?", model: "small-chat" });
    expect(events.at(-1)).toMatchObject({ outcome: "ok" });
    expect((s.chat.lastRequest.body as Json).model).toBe("small-chat");
  });

  it("the model stops mid-answer: `error` upstream_error, then `done` with outcome error; the status stays 200", async () => {
    await s.chat.setMode("dropMidStream", { dropAfterChunks: 2 });
    const { events } = await ask(user, slug, { question: "How do glaciers form?" });
    expect(events[0]?.type).toBe("sources");
    const [error, done] = events.slice(-2);
    expect(error).toEqual({ type: "error", code: "upstream_error", message: expect.any(String) });
    expect(done).toEqual({
      type: "done",
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      latency_ms: expect.any(Number),
      outcome: "error",
    });
    expect(events.slice(1, -2).every((event) => event.type === "delta")).toBe(true);
  });

  it("usage: the answer as knowledge_bases.chat (the account's, no key, the chat model's tokens), the question's embedding and rerank as knowledge_bases.embed and .rerank", async () => {
    const { response, events } = await ask(user, slug, { question: "How do glaciers form?" });
    const requestId = response.headers.get("x-request-id");
    const done = events.at(-1);
    const records = await eventually(
      async () =>
        (
          (await s.t.admin("GET", `/usage?account_id=${user.accountId}&limit=100`)).body.data as Json[]
        ).filter(
          (record) => record.request_id === requestId || record.request_id.startsWith(`${requestId}_`),
        ),
      (list) => list.length === 3,
    );
    expect(records.map((record) => record.endpoint).sort()).toEqual([
      "knowledge_bases.chat",
      "knowledge_bases.embed",
      "knowledge_bases.rerank",
    ]);
    const byEndpoint = Object.fromEntries(records.map((record) => [record.endpoint, record]));
    expect(byEndpoint["knowledge_bases.chat"]).toMatchObject({
      request_id: requestId,
      key_id: null,
      account_id: user.accountId,
      model: "gemma3.8-27b",
      zone: "ch-ti",
      outcome: "ok",
      units: { input_tokens: done?.prompt_tokens, output_tokens: done?.completion_tokens },
    });
    expect(byEndpoint["knowledge_bases.chat"].cost).toBeGreaterThan(0);
    expect(byEndpoint["knowledge_bases.embed"]).toMatchObject({
      key_id: null,
      account_id: user.accountId,
      model: "bge-m3",
      outcome: "ok",
    });
    expect(byEndpoint["knowledge_bases.rerank"]).toMatchObject({ key_id: null, model: "bge-reranker-v2-m3" });
    // The ingestion's embeddings were the account's too.
    const all = (await s.t.admin("GET", `/usage?account_id=${user.accountId}&limit=200`)).body.data as Json[];
    expect(all.some((record) => record.endpoint === "knowledge_bases.ingest" && record.key_id === null)).toBe(
      true,
    );
  });
});

describe('spec "Rate limits": POST /rag/kb/{slug}/chat, 30 per minute per user, on the shared user counter', () => {
  let s: KbStack;
  beforeAll(async () => {
    s = await startKbStack();
  });
  afterAll(() => s.close());

  it("after the base, one upload and 28 questions, the next question is 429 with Retry-After; nothing embedded for it", async () => {
    const user = await s.user();
    const slug = await s.createBase(user, "Limited");
    expect((await s.ingest(user, slug, documentFixture("notes.txt"), "notes.txt")).status).toBe("ready");
    for (let i = 1; i <= 28; i++) {
      const response = await user.post(`/rag/kb/${slug}/chat`, { question: `Bread ${i}?` });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-ratelimit-remaining")).toBe(String(28 - i));
      await response.text();
    }
    s.tei.clearRequests();
    const refused = await user.post(`/rag/kb/${slug}/chat`, { question: "Bread?" });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(s.tei.requests).toHaveLength(0);
    // Creating a base (also 30) is refused on the same counter.
    expect((await user.post("/rag/kb", { name: "One more" })).status).toBe(429);
  });
});

describe("Knowledge-base chat on every store: the same sources (pgvector on PGlite, the exact scan without it)", () => {
  const seen: Record<string, unknown[]> = {};

  it.each(STORE_KINDS)("%s: upload, then ask", async (kind) => {
    const s = await startKbStack({ store: kind });
    try {
      const { user, slug } = await nature(s);
      const answers: unknown[] = [];
      for (const question of ["How do glaciers form?", "Where do leafcutter ants grow their fungus?"]) {
        const { events } = await ask(user, slug, { question, top_k: 4 });
        expect(events.at(-1)).toMatchObject({ outcome: "ok" });
        answers.push(
          events[0]?.sources.map(({ document_id: _id, ...source }: { document_id: string }) => source),
        );
      }
      expect((answers[0] as Json[])[0]).toMatchObject({ document: "two-pages.pdf", page: 2 });
      expect((answers[1] as Json[])[0]).toMatchObject({
        document: "headings.docx",
        section: "Leafcutter ants",
      });
      seen[kind] = answers;
    } finally {
      await s.close();
    }
  });

  // Passages that share no word with the question tie (cosine 0, rerank score 0); ties go to the
  // smaller passage id, a random UUID, so which of them fill the last places differs from run to
  // run on any store. The passages that answer, their order and every score must be the same.
  it.runIf(STORE_KINDS.length > 1)("PostgreSQL gives the sources PGlite gives", () => {
    const answering = (answers: unknown[] | undefined) =>
      answers?.map((sources) => (sources as Array<{ score: number }>).filter((source) => source.score > 0));
    const scores = (answers: unknown[] | undefined) =>
      answers?.map((sources) => (sources as Array<{ score: number }>).map((source) => source.score));
    expect(answering(seen.postgres)).toEqual(answering(seen.pglite));
    expect(answering(seen.pglite)?.every((sources) => sources.length > 0)).toBe(true);
    expect(scores(seen.postgres)).toEqual(scores(seen.pglite));
  });
});
