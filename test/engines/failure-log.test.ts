import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { capturedLogger, lineWhere } from "../helpers/log-lines.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const MODEL = "gemma3.8-27b";
const PROMPT = "purple elephants dance at midnight";

describe("the failure log line (one warn line per failed upstream attempt, never a key or a prompt)", () => {
  const fakes = {
    notServed: new FakeOpenAiServer({ models: ["google/gemma-3-27b-it"] }),
    error500: new FakeOpenAiServer(),
    refused: new FakeOpenAiServer(),
    hanging: new FakeOpenAiServer(),
  };
  const log = capturedLogger();
  let t: TestApp;
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    await Promise.all(Object.values(fakes).map((fake) => fake.start()));
    t = await startTestApp({
      logger: log.logger,
      config: {
        installation: { zones: [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }] },
        engines: { first_byte_timeout_ms: 300 },
        models: [{ id: MODEL, kind: "chat" }],
        machines: [
          // vLLM started with its own model name while the configuration names the catalogue id.
          { name: "vllm-a", zone: "a", protocol: "openai", url: fakes.notServed.url, models: [MODEL] },
          { name: "vllm-b", zone: "b", protocol: "openai", url: fakes.error500.url, models: [MODEL] },
          { name: "vllm-c", zone: "c", protocol: "openai", url: fakes.refused.url, models: [MODEL] },
          { name: "vllm-d", zone: "d", protocol: "openai", url: fakes.hanging.url, models: [MODEL] },
        ],
      },
    });
    await fakes.error500.setMode("error500");
    await fakes.refused.setMode("refuse");
    await fakes.hanging.setMode("hang");
    for (const zone of ["a", "b", "c", "d"]) keys[zone] = (await t.newKey({ key: { zones: [zone] } })).key;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(Object.values(fakes).map((fake) => fake.close()));
  });

  it.each([
    {
      rule: "vLLM answering 404 'model does not exist' -> 502; the warn line has the status, the engine's error type and code and the length of its message, not the message",
      zone: "a",
      status: 502,
      line: {
        machine: "vllm-a",
        error_kind: "status",
        upstream_status: 404,
        upstream_type: "NotFoundError",
        upstream_code: "404",
        message_chars: `The model \`${MODEL}\` does not exist.`.length,
      },
      reason: "the upstream answered 404",
    },
    {
      rule: "a machine answering 500 -> the status, the engine's error type and code and the length of its message",
      zone: "b",
      status: 502,
      line: {
        machine: "vllm-b",
        error_kind: "status",
        upstream_status: 500,
        upstream_type: "InternalServerError",
        upstream_code: "500",
        message_chars: "fake failure".length,
      },
      reason: "the upstream answered 500",
    },
    {
      rule: "a refused connection -> error kind connect and the error code",
      zone: "c",
      status: 503,
      line: { machine: "vllm-c", error_kind: "connect" },
      reason: "ECONNREFUSED",
    },
    {
      rule: "no answer before the first-byte timeout -> error kind timeout",
      zone: "d",
      status: 502,
      line: { machine: "vllm-d", error_kind: "timeout" },
      reason: "in time",
    },
  ])("$rule", async ({ zone, status, line, reason }) => {
    const key = keys[zone] ?? "";
    const response = await t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: PROMPT }] }),
    });
    expect(response.status).toBe(status);
    await response.text();
    const requestId = response.headers.get("x-request-id");
    const failures = log.lines.filter(
      (l) => l.msg === "upstream attempt failed" && l.request_id === requestId,
    );
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ level: 40, zone, model: MODEL, ...line });
    expect(failures[0].reason).toContain(reason);
    expect(failures[0].reason.length).toBeLessThanOrEqual(200);
    expect(log.text()).not.toContain("does not exist");
    expect(log.text()).not.toContain("fake failure");
    if (!("upstream_status" in line)) expect(failures[0]).not.toHaveProperty("upstream_status");

    const text = log.text();
    expect(text).not.toContain(key);
    expect(text).not.toContain(PROMPT);
    expect(text).not.toContain(fakes.notServed.url.replace("http://", ""));
  });

  it("the request's own line names the machine that failed, its zone and the key id", async () => {
    const { key, keyId } = await t.newKey({ key: { zones: ["b"] } });
    const response = await t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: PROMPT }] }),
    });
    expect(response.status).toBe(502);
    const requestId = response.headers.get("x-request-id");
    const line = await lineWhere(log.lines, (l) => l.msg === "request" && l.request_id === requestId);
    expect(line).toMatchObject({ status: 502, key_id: keyId, model: MODEL, machine: "vllm-b", zone: "b" });
    expect(typeof line.upstream_ms).toBe("number");
  });
});
