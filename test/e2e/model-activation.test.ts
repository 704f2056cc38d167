import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { CHAT_MODEL, postJson, usageOf } from "./engine-stack.ts";

const ON_REQUEST = "gemma3.8-70b";

describe("503 model_activation_required: a model served on request answers only once activated", () => {
  const fake = new FakeOpenAiServer();
  let engine: { url: string; close(): Promise<void> };
  let t: TestApp;
  beforeAll(async () => {
    engine = await fake.start();
    t = await startTestApp({
      config: {
        installation: { zones: [{ id: "ch-ti" }] },
        models: [
          { id: CHAT_MODEL, kind: "chat" },
          { id: ON_REQUEST, kind: "chat", on_request: true },
        ],
        machines: [
          {
            name: "ti-big",
            zone: "ch-ti",
            protocol: "openai",
            url: engine.url,
            models: [ON_REQUEST, CHAT_MODEL],
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await engine.close();
  });

  it("refuses before anything runs (nothing charged, nothing sent), then serves once the operator activates it", async () => {
    const { key, keyId } = await t.newKey();
    const body = { model: ON_REQUEST, messages: [{ role: "user", content: "big question" }] };
    const refused = await postJson(t, key, "/v1/chat/completions", body);
    expect(refused.status).toBe(503);
    expect((await readJson(refused)).error).toMatchObject({ type: "model_activation_required" });
    expect(await usageOf(t, keyId, 0)).toEqual([]);
    expect(fake.requests).toHaveLength(0);

    const listed = await t.admin("GET", "/models");
    expect(listed.body.data.find((m: { id: string }) => m.id === ON_REQUEST)).toMatchObject({
      on_request: true,
      active: false,
      machines: ["ti-big"],
    });
    const activated = await t.admin("POST", `/models/${ON_REQUEST}/activate`);
    expect(activated.body).toMatchObject({ id: ON_REQUEST, active: true });
    expect((await postJson(t, key, "/v1/chat/completions", body)).status).toBe(200);

    await t.admin("POST", `/models/${ON_REQUEST}/deactivate`);
    expect((await postJson(t, key, "/v1/chat/completions", body)).status).toBe(503);
  });

  it("the operator API refuses models not on request (400) and unknown ones (404)", async () => {
    expect((await t.admin("POST", `/models/${CHAT_MODEL}/activate`)).body.error.code).toBe("not_on_request");
    expect((await t.admin("POST", "/models/nope/activate")).status).toBe(404);
  });
});
