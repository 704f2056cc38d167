import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const catalogue = [
  { id: "gemma3.8-27b", kind: "chat", created: 1_770_000_000 },
  { id: "gemma2.5:1.5b", kind: "chat" },
  { id: "google/gemma-3-27b-it", kind: "chat" },
  { id: "bge-m3", kind: "embedding" },
  { id: "tts-1", kind: "tts" },
  { id: "tts-1-hd", kind: "tts" },
];

describe("GET /v1/models/{id} answers the model object (the SDKs' models.retrieve)", () => {
  let t: TestApp;
  let key: string;
  let listed: Array<Record<string, unknown>>;
  beforeAll(async () => {
    t = await startTestApp({
      config: {
        models: catalogue,
        installation: { owned_by: "acme-ai" },
        tiers: { slow: { multiplier: 1, requests_per_minute: 1_000 } },
      },
    });
    key = (await t.newKey()).key;
    listed = (await readJson(await get("/v1/models"))).data;
  });
  afterAll(() => t.close());

  const get = (path: string, headers: Record<string, string> = {}) =>
    t.fetch(path, { headers: { authorization: `Bearer ${key}`, ...headers } });

  const ids: Array<[string, string]> = [
    ["a plain id", "gemma3.8-27b"],
    ["an id with ':' sent as it is", "gemma2.5:1.5b"],
    ["an id with ':' URL-encoded", "gemma2.5%3A1.5b"],
    ["an id with '/' sent as it is", "google/gemma-3-27b-it"],
    ["an id with '/' URL-encoded", "google%2Fgemma-3-27b-it"],
  ];
  it.each(ids)("%s: the same object as in the list", async (_name, path) => {
    const response = await get(`/v1/models/${path}`);
    expect(response.status).toBe(200);
    const id = decodeURIComponent(path);
    expect(await readJson(response)).toEqual(listed.find((model) => model.id === id));
  });

  it("the object has id, object 'model', created and the installation's owned_by", async () => {
    expect(await readJson(await get("/v1/models/gemma3.8-27b"))).toEqual({
      id: "gemma3.8-27b",
      object: "model",
      created: 1_770_000_000,
      owned_by: "acme-ai",
    });
  });

  const unknown: Array<[string, string]> = [
    ["an id not in the catalogue", "gpt-4o"],
    ["tts-1-hd, accepted but never listed", "tts-1-hd"],
    ["an id of the catalogue in another case", "BGE-M3"],
  ];
  it.each(unknown)("spec Errors 404 model_not_found: %s", async (_name, id) => {
    const response = await get(`/v1/models/${id}`);
    expect(response.status).toBe(404);
    expect(await readJson(response)).toEqual({
      error: {
        message: expect.stringContaining(id),
        type: "model_not_found",
        code: "model_not_found",
        param: "model",
        request_id: response.headers.get("x-request-id"),
      },
    });
  });

  it("GET /v1/models/ (no id) is 404 unknown_endpoint", async () => {
    const response = await get("/v1/models/");
    expect(response.status).toBe(404);
    expect((await readJson(response)).error.code).toBe("unknown_endpoint");
  });

  it("official openai SDK: models.retrieve returns the model, and NotFoundError for an unknown one", async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    for (const id of ["gemma2.5:1.5b", "google/gemma-3-27b-it", "tts-1"]) {
      const model = await client.models.retrieve(id);
      expect(model).toMatchObject({ id, object: "model", owned_by: "acme-ai" });
    }
    const missing = await client.models.retrieve("nope").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ status: 404, type: "model_not_found" });
  });

  it("spec Authentication: without a valid key it is 401, as every key-API route", async () => {
    const response = await t.fetch("/v1/models/gemma3.8-27b");
    expect(response.status).toBe(401);
    expect((await readJson(response)).error.code).toBe("invalid_api_key");
  });

  it("spec Rate limits: counted toward the tier limit like GET /v1/models, without an endpoint limit", async () => {
    const limited = await startTestApp({
      config: { models: catalogue, tiers: { slow: { multiplier: 1, requests_per_minute: 2 } } },
    });
    try {
      const own = (await limited.newKey()).key;
      const call = (path: string) => limited.fetch(path, { headers: { authorization: `Bearer ${own}` } });
      const first = await call("/v1/models/bge-m3");
      expect(first.status).toBe(200);
      expect(first.headers.get("x-ratelimit-limit")).toBeNull();
      expect((await call("/v1/models")).status).toBe(200);
      const third = await call("/v1/models/bge-m3");
      expect(third.status).toBe(429);
      expect((await readJson(third)).error.type).toBe("rate_limit_exceeded");
    } finally {
      await limited.close();
    }
  });
});

describe("the list and the lookup follow a configuration reload", () => {
  it("a model added by a reload is listed and retrieved, a removed one is 404 model_not_found", async () => {
    const before = [{ id: "gemma3.8-27b", kind: "chat" }];
    const after = [{ id: "gemma3.9-12b", kind: "chat" }];
    const t = await startTestApp({
      config: { models: before },
      loadConfig: () => parseConfig({ server: { log_level: "silent" }, models: after }),
    });
    try {
      const key = (await t.newKey()).key;
      const get = (path: string) => t.fetch(path, { headers: { authorization: `Bearer ${key}` } });
      expect((await get("/v1/models/gemma3.8-27b")).status).toBe(200);
      await t.app.reloader.reload("test");
      const listed = await readJson(await get("/v1/models"));
      expect(listed.data.map((model: { id: string }) => model.id)).toEqual(["gemma3.9-12b"]);
      expect((await get("/v1/models/gemma3.9-12b")).status).toBe(200);
      const removed = await get("/v1/models/gemma3.8-27b");
      expect(removed.status).toBe(404);
      expect((await readJson(removed)).error.type).toBe("model_not_found");
    } finally {
      await t.close();
    }
  });
});
