import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const catalogue = [
  { id: "gemma3.8-27b", kind: "chat" },
  { id: "bge-m3", kind: "embedding" },
  { id: "bge-reranker-v2-m3", kind: "rerank" },
  { id: "asr-1", kind: "asr" },
  { id: "asr-1-hd", kind: "asr" },
  { id: "tts-1", kind: "tts" },
  { id: "tts-1-hd", kind: "tts" },
];

describe("GET /v1/models (spec: Text generation parameters / GET /v1/models)", () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp({ config: { models: catalogue, installation: { owned_by: "acme-ai" } } });
    key = (await t.newKey()).key;
  });
  afterAll(() => t.close());

  it("lists the catalogue with one owned_by for every entry, and leaves tts-1-hd out", async () => {
    const response = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    const body = await readJson(response);
    expect(body.object).toBe("list");
    expect(body.data.map((m: { id: string }) => m.id)).toEqual([
      "gemma3.8-27b",
      "bge-m3",
      "bge-reranker-v2-m3",
      "asr-1",
      "asr-1-hd",
      "tts-1",
    ]);
    for (const model of body.data) {
      expect(model).toEqual({
        id: model.id,
        object: "model",
        created: expect.any(Number),
        owned_by: "acme-ai",
      });
    }
  });

  it("answers the official openai client", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toContain("asr-1");
    expect(ids).not.toContain("tts-1-hd");
  });
});
