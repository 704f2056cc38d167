import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer, FakeTeiServer } from "../fakes/index.ts";
import { capturedLogger } from "../helpers/log-lines.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const MODEL = "gemma3.8-27b";
const PROMPT = "a paper boat drifting down a rain gutter";
// Served by the tei machine alone, which cannot chat.
const TEI_ONLY = "other3.8-27b";

/** A key API request with a JSON body. */
function post(t: TestApp, key: string, path: string, body: unknown): Promise<Response> {
  return t.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** What a fake engine was asked for, the probes of its kind of server left out. */
function work(requests: Array<{ path: string }>, probes: string[]): Array<{ path: string }> {
  return requests.filter((request) => !probes.includes(request.path));
}
const TEI_PROBES = ["/health", "/info"];
const OPENAI_PROBES = ["/health", "/v1/models"];

// docs/architecture.md: a machine is a candidate for a kind of work only when its protocol offers it.
describe("placement: a machine whose protocol cannot do the work is never a candidate for it", () => {
  const tei = new FakeTeiServer();
  const vllm = new FakeOpenAiServer();
  const log = capturedLogger();
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    await Promise.all([tei.start(), vllm.start()]);
    t = await startTestApp({
      logger: log.logger,
      config: {
        installation: { zones: [{ id: "a" }, { id: "b" }] },
        models: [
          { id: MODEL, kind: "chat" },
          { id: TEI_ONLY, kind: "chat" },
        ],
        machines: [
          // Listed first and idle: without the rule it would be tried, and fail, before the other.
          { name: "tei-a", zone: "a", protocol: "tei", url: tei.url, models: [MODEL, TEI_ONLY] },
          { name: "vllm-b", zone: "b", protocol: "openai", url: vllm.url, models: [MODEL] },
        ],
      },
    });
    ({ key } = await t.newKey());
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([tei.close(), vllm.close()]);
  });

  it("a chat request goes to the openai machine; the tei machine is not asked and no attempt fails", async () => {
    for (let i = 0; i < 4; i++) {
      const response = await post(t, key, "/v1/chat/completions", {
        model: MODEL,
        messages: [{ role: "user", content: "hello" }],
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-zona")).toBe("b");
      await response.text();
    }
    expect(work(tei.requests, TEI_PROBES)).toEqual([]);
    expect(log.lines.filter((line) => line.msg === "upstream attempt failed")).toEqual([]);
  });

  it("spec Key API status codes: 503 zone_unavailable, the message naming the key's zones, retry later, when the only machine of the model cannot chat (not 502: nothing was tried)", async () => {
    const response = await post(t, key, "/v1/chat/completions", {
      model: TEI_ONLY,
      messages: [{ role: "user", content: "hello" }],
    });
    expect(response.status).toBe(503);
    expect(response.headers.get("x-should-retry")).toBeNull();
    const body = (await response.json()) as { error: { type: string; code: string | null; message: string } };
    expect(body.error.type).toBe("zone_unavailable");
    expect(body.error.message).toContain("zones a, b");
    expect(work(tei.requests, TEI_PROBES)).toEqual([]);
  });
});

// Spec "Images and video exist only where machines make them": a model whose only machine's protocol
// cannot make pictures or videos has no machine making it.
describe("placement: a picture or video model served only by a machine that cannot make them", () => {
  const vllm = new FakeOpenAiServer();
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    await vllm.start();
    t = await startTestApp({
      config: {
        installation: { zones: [{ id: "a" }] },
        models: [
          { id: "wan-2.2-5b-fast", kind: "video" },
          { id: "z-image-turbo", kind: "image" },
        ],
        machines: [
          {
            name: "vllm",
            zone: "a",
            protocol: "openai",
            url: vllm.url,
            models: ["wan-2.2-5b-fast", "z-image-turbo"],
          },
        ],
      },
    });
    ({ key } = await t.newKey());
  });
  afterAll(async () => {
    await t.close();
    await vllm.close();
  });

  it.each([
    { endpoint: "/v1/videos", model: "wan-2.2-5b-fast" },
    { endpoint: "/v1/images/generations", model: "z-image-turbo" },
  ])("spec Key API status codes: $endpoint answers 503 no_engine_available, retry later, and the machine is never asked", async ({
    endpoint,
    model,
  }) => {
    const response = await post(t, key, endpoint, { model, prompt: PROMPT });
    expect(response.status).toBe(503);
    expect(response.headers.get("x-should-retry")).toBeNull();
    const body = (await response.json()) as { error: { type: string; code: string | null } };
    expect(body.error).toMatchObject({ type: "server_error", code: "no_engine_available" });
    expect(work(vllm.requests, OPENAI_PROBES)).toEqual([]);
  });

  it("no video job is kept for the refused request", async () => {
    const response = await t.fetch("/v1/videos", { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: unknown[] }).data).toEqual([]);
  });
});
