import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { vectorOf } from "./fake-text.ts";
import { startTextApp, TEXT_MODELS, type TextApp } from "./text-app.ts";

const floatsOf = (base64: string) => {
  const bytes = Buffer.from(base64, "base64");
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
};

describe("POST /v1/embeddings (spec: model always bge-m3; input 1 to 32 texts; float or base64)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  it("answers the list of embeddings with the catalogue's model, usage and X-Zona", async () => {
    a.fake.zone = "zone-e";
    const answer = await a.post("/v1/embeddings", {
      model: "text-embedding-3-large",
      input: ["alpha", "beta"],
    });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("zone-e");
    expect(answer.body).toEqual({
      object: "list",
      data: [
        { object: "embedding", index: 0, embedding: vectorOf("alpha") },
        { object: "embedding", index: 1, embedding: vectorOf("beta") },
      ],
      model: "bge-m3",
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    expect(a.fake.last()).toMatchObject({ method: "embed", input: ["alpha", "beta"] });
    expect(a.fake.last().context.endpoint).toBe("embeddings");
  });

  it("base64: little-endian float32 values decode to the same vectors", async () => {
    const texts = ["alpha", "beta", "gamma"];
    const floats = await a.post("/v1/embeddings", { input: texts, encoding_format: "float" });
    const base64 = await a.post("/v1/embeddings", { input: texts, encoding_format: "base64" });
    expect(base64.status).toBe(200);
    for (const [i, item] of base64.body.data.entries()) {
      expect(typeof item.embedding).toBe("string");
      expect(floatsOf(item.embedding)).toEqual(floats.body.data[i].embedding);
    }
  });

  const accepted: Array<[string, Record<string, unknown>, string[]]> = [
    ["input: one string", { input: "hello" }, ["hello"]],
    [
      "input: a list of 32 strings",
      { input: Array.from({ length: 32 }, (_, i) => `t${i}`) },
      Array.from({ length: 32 }, (_, i) => `t${i}`),
    ],
    [
      "ignored: model, dimensions, user and other fields",
      { input: "x", model: "anything", dimensions: 256, user: "u", something: true },
      ["x"],
    ],
  ];
  for (const [title, request, texts] of accepted) {
    it(title, async () => {
      const answer = await a.post("/v1/embeddings", request);
      expect(answer.status, answer.text).toBe(200);
      expect(a.fake.last().input).toEqual(texts);
    });
  }

  const refused: Array<[string, Record<string, unknown>, string]> = [
    ["400: input missing", {}, "input"],
    ["400: input null", { input: null }, "input"],
    ["400: a token-id list", { input: [1, 2, 3] }, "input"],
    ["400: a list of token-id lists", { input: [[1, 2], [3]] }, "input"],
    ["400: an empty string", { input: "" }, "input"],
    ["400: an empty string in the list", { input: ["a", ""] }, "input"],
    ["400: an empty list", { input: [] }, "input"],
    ["400: more than 32 texts", { input: Array.from({ length: 33 }, () => "t") }, "input"],
    ["400: input neither text nor a list", { input: { text: "x" } }, "input"],
    [
      "400: encoding_format other than float or base64",
      { input: "x", encoding_format: "int8" },
      "encoding_format",
    ],
  ];
  for (const [title, request, param] of refused) {
    it(title, async () => {
      const answer = await a.post("/v1/embeddings", request);
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param });
      expect(a.fake.received).toEqual([]);
    });
  }
});

describe("POST /v1/rerank (spec: model always bge-reranker-v2-m3; query, documents 1 to 32, top_n, return_documents)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  const documents = ["the cat sat", "dogs bark", "a cat and a dog", "nothing here"];

  it("answers results best first, with the catalogue's model, usage and X-Zona", async () => {
    a.fake.zone = "zone-k";
    const answer = await a.post("/v1/rerank", { model: "rerank-english-v3.0", query: "cat dog", documents });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("zone-k");
    expect(answer.body).toEqual({
      id: expect.any(String),
      model: "bge-reranker-v2-m3",
      results: [
        { index: 2, relevance_score: expect.any(Number) },
        { index: 0, relevance_score: expect.any(Number) },
        { index: 3, relevance_score: expect.any(Number) },
        { index: 1, relevance_score: expect.any(Number) },
      ],
      usage: { total_tokens: expect.any(Number) },
    });
    const scores = answer.body.results.map((r: { relevance_score: number }) => r.relevance_score);
    expect([...scores].sort((x, y) => y - x)).toEqual(scores);
    expect(a.fake.last()).toMatchObject({ method: "rerank", input: { query: "cat dog", documents } });
  });

  it("top_n cuts the results; return_documents adds each document's text", async () => {
    const answer = await a.post("/v1/rerank", { query: "cat", documents, top_n: 2, return_documents: true });
    expect(answer.status).toBe(200);
    expect(answer.body.results).toEqual([
      { index: 2, relevance_score: expect.any(Number), document: { text: "a cat and a dog" } },
      { index: 0, relevance_score: expect.any(Number), document: { text: "the cat sat" } },
    ]);
  });

  it("documents as {text} objects are read too", async () => {
    const answer = await a.post("/v1/rerank", { query: "cat", documents: [{ text: "cat" }, "dog"] });
    expect(answer.status, answer.text).toBe(200);
    expect(a.fake.last().input).toEqual({ query: "cat", documents: ["cat", "dog"] });
  });

  it("a query of 32,000 characters and 32 documents are accepted", async () => {
    const answer = await a.post("/v1/rerank", {
      query: "q".repeat(32_000),
      documents: Array.from({ length: 32 }, (_, i) => `d${i}`),
      top_n: 32,
    });
    expect(answer.status, answer.text).toBe(200);
  });

  const refused: Array<[string, Record<string, unknown>, string]> = [
    ["400: query missing", { documents }, "query"],
    ["400: query empty", { query: "", documents }, "query"],
    ["400: query over 32,000 characters", { query: "q".repeat(32_001), documents }, "query"],
    ["400: query not a string", { query: 5, documents }, "query"],
    ["400: documents missing", { query: "q" }, "documents"],
    ["400: no documents", { query: "q", documents: [] }, "documents"],
    [
      "400: more than 32 documents",
      { query: "q", documents: Array.from({ length: 33 }, () => "d") },
      "documents",
    ],
    ["400: an empty document", { query: "q", documents: ["a", ""] }, "documents"],
    ["400: a document that is not text", { query: "q", documents: ["a", 5] }, "documents"],
    ["400: top_n 0", { query: "q", documents, top_n: 0 }, "top_n"],
    ["400: top_n above the number of documents", { query: "q", documents, top_n: 5 }, "top_n"],
    [
      "400: return_documents not a boolean",
      { query: "q", documents, return_documents: "yes" },
      "return_documents",
    ],
  ];
  for (const [title, request, param] of refused) {
    it(title, async () => {
      const answer = await a.post("/v1/rerank", request);
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param });
      expect(a.fake.received).toEqual([]);
    });
  }
});

describe("POST /v1/rerank where turned off (no rerank model in the catalogue)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp(TEXT_MODELS.filter((model) => model.kind !== "rerank"));
  });
  afterAll(() => a.close());

  it("answers 501 type not_implemented, even for a valid request", async () => {
    const answer = await a.post("/v1/rerank", { query: "q", documents: ["d"] });
    expect(answer.status).toBe(501);
    expect(answer.body.error).toMatchObject({ type: "not_implemented" });
    expect(a.fake.received).toEqual([]);
  });
});
