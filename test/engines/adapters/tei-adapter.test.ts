import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTeiAdapter } from "../../../src/engines/adapters/tei-adapter.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { EmbeddingEngine, RerankEngine } from "../../../src/engines/modalities.ts";
import { FakeTeiServer, fakeEmbedding, fakeMachine } from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeTeiServer();
let client: UpstreamClient;
let embed: EmbeddingEngine["embed"];
let rerank: RerankEngine["rerank"];
const signal = () => new AbortController().signal;
const machine = () => fakeMachine("tei", fake.url, { api_key: "tei-key" });

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300 });
  const adapter = createTeiAdapter(client);
  embed = adapter.embeddings.embed;
  rerank = adapter.rerank.rerank;
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal");
  fake.clearRequests();
});

describe("tei adapter", () => {
  it("embed posts /embed with truncate and returns 1024-dim vectors, promptTokens null", async () => {
    const texts = ["Grüezi", "Bonjour"];
    const result = await embed(machine(), "bge-m3", texts, signal());
    expect(fake.lastRequest.path).toBe("/embed");
    expect(fake.lastRequest.body).toEqual({ inputs: texts, truncate: true });
    expect(fake.lastRequest.headers.authorization).toBe("Bearer tei-key");
    expect(result.promptTokens).toBeNull();
    expect(result.vectors).toEqual(texts.map((t) => fakeEmbedding(t, 1024)));
    expect(result.vectors[0]).toHaveLength(1024);
  });

  it("rerank posts /rerank with raw_scores false and maps {index, score} to relevance scores", async () => {
    const documents = ["the cat sat", "a dog and a cat sat down", "nothing here"];
    const scores = await rerank(machine(), "bge-reranker-v2-m3", "cat sat down", documents, signal());
    expect(fake.lastRequest.path).toBe("/rerank");
    expect(fake.lastRequest.body).toEqual({
      query: "cat sat down",
      texts: documents,
      raw_scores: false,
      truncate: true,
    });
    expect(scores).toEqual([
      { index: 1, relevance_score: 1 },
      { index: 0, relevance_score: 2 / 3 },
      { index: 2, relevance_score: 0 },
    ]);
  });

  it("maps refuse to connect, 500 to status 500 retryable, a 422 to status 422 not retryable, hang to timeout", async () => {
    await fake.setMode("refuse");
    expect((await failure(embed(machine(), "bge-m3", ["x"], signal()))).kind).toBe("connect");
    await fake.setMode("error500");
    const status = await failure(rerank(machine(), "r", "q", ["d"], signal()));
    expect([status.kind, status.status, status.retryable]).toEqual(["status", 500, true]);
    await fake.setMode("normal");
    const invalid = await failure(embed(machine(), "bge-m3", [], signal()));
    expect([invalid.kind, invalid.status, invalid.retryable]).toEqual(["status", 422, false]);
    expect(invalid.message).toContain("cannot be empty");
    await fake.setMode("hang");
    expect((await failure(embed(machine(), "bge-m3", ["x"], signal()))).kind).toBe("timeout");
  });

  it("maps an answer cut mid-body to connect and an aborted signal to aborted", async () => {
    await fake.setMode("dropMidStream");
    expect((await failure(embed(machine(), "bge-m3", ["x"], signal()))).kind).toBe("connect");
    await fake.setMode("slow", { slowMs: 200 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    expect((await failure(embed(machine(), "bge-m3", ["x"], controller.signal))).kind).toBe("aborted");
  });
});
