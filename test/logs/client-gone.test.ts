import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AppUserHandle, signedInUser } from "../app/app-helpers.ts";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { type CapturedLogs, captureLogs, LEVEL } from "../helpers/log-capture.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const MODEL = "gemma3.8-27b";
const CLIENT_GONE = /client went away/;

// "A client that goes away mid-request is logged at `error` level with a stack trace
// [...]: it is not a fault; log it once at `info`, without a stack."
describe("a client that goes away is logged once at info, never as an error", () => {
  let engine: FakeOpenAiServer;
  let t: TestApp;
  let logs: CapturedLogs;
  let key: string;
  let user: AppUserHandle;

  beforeAll(async () => {
    engine = new FakeOpenAiServer();
    const { url } = await engine.start();
    logs = captureLogs("trace");
    t = await startTestApp({
      logger: logs.logger,
      config: {
        installation: { zones: [{ id: "ch-ti" }] },
        tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
        models: [{ id: MODEL, kind: "chat" }],
        machines: [{ name: "ti-1", zone: "ch-ti", protocol: "openai", url, models: [MODEL] }],
      },
    });
    key = (await t.newKey()).key;
    user = await signedInUser(t);
  });
  afterAll(async () => {
    await t.close();
    await engine.close();
  });
  beforeEach(async () => {
    await engine.setMode("normal", { chunkDelayMs: 0, slowMs: 300, chunks: undefined });
    engine.clearRequests();
    logs.raw.length = 0;
  });

  const chat = (stream: boolean) => ({
    model: MODEL,
    stream,
    messages: [{ role: "user", content: "Tell me a long story" }],
  });

  const cases: Array<{
    title: string;
    path: "key" | "app";
    body: () => unknown;
    setUp: () => Promise<void>;
    leave: "first-bytes" | "upstream-called";
  }> = [
    {
      title: "non-streamed chat completion, while the engine is slow to answer",
      path: "key",
      body: () => chat(false),
      setUp: () => engine.setMode("slow", { slowMs: 60_000 }),
      leave: "upstream-called",
    },
    {
      title: "streamed chat completion, before its first byte (engine slow)",
      path: "key",
      body: () => chat(true),
      setUp: () => engine.setMode("slow", { slowMs: 60_000 }),
      leave: "upstream-called",
    },
    {
      title: "streamed chat completion, in the middle of the stream",
      path: "key",
      body: () => chat(true),
      setUp: async () => engine.configure({ chunkDelayMs: 200, chunks: 200 }),
      leave: "first-bytes",
    },
    {
      title: "app chat stream, in the middle of the answer",
      path: "app",
      body: () => ({ content: "Tell me a long story", model: MODEL }),
      setUp: async () => engine.configure({ chunkDelayMs: 200, chunks: 200 }),
      leave: "first-bytes",
    },
  ];

  it.each(
    cases,
  )("$title: no line at error or warn level, exactly one info line saying the client went away", async ({
    path,
    body,
    setUp,
    leave,
  }) => {
    await setUp();
    const target =
      path === "key"
        ? { path: "/v1/chat/completions", token: key }
        : { path: `/api/v1/chat/sessions/${await newConversationOf(user)}/messages`, token: user.token };
    logs.raw.length = 0;
    await hangUp(
      `${t.url}${target.path}`,
      target.token,
      body(),
      leave === "first-bytes" ? "first-bytes" : () => engine.requestsTo("/v1/chat/completions").length > 0,
    );
    await until(() => logs.lines().some((line) => CLIENT_GONE.test(line.msg ?? "")));
    // What the cancelled work still logs comes within moments: its engine call ends at once.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lines = logs.lines();
    const loud = lines.filter((line) => line.level >= LEVEL.warn);
    expect(loud).toEqual([]);
    const gone = lines.filter((line) => CLIENT_GONE.test(line.msg ?? ""));
    expect(gone).toHaveLength(1);
    expect(gone[0]?.level).toBe(LEVEL.info);
    expect(gone[0]).not.toHaveProperty("err");
    expect(JSON.stringify(gone[0])).not.toMatch(/stack|\bat .*\.ts:\d+/);
  });

  it("a client that stays gets no client-gone line (the check can tell the two apart)", async () => {
    const response = await t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(chat(false)),
    });
    expect(response.status).toBe(200);
    await response.text();
    await until(() => logs.lines().some((line) => line.msg === "request"));
    expect(logs.lines().some((line) => line.msg === "request")).toBe(true);
    expect(logs.lines().filter((line) => CLIENT_GONE.test(line.msg ?? ""))).toEqual([]);
  });
});

async function newConversationOf(user: AppUserHandle): Promise<string> {
  const response = await user.post("/chat/sessions", {});
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** POSTs JSON on a connection of its own and drops it once `when` is reached. */
function hangUp(
  url: string,
  token: string,
  body: unknown,
  when: "first-bytes" | (() => boolean),
): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(url, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
    req.on("error", () => {});
    req.on("close", () => resolve());
    req.on("response", (res) => {
      res.once("data", () => req.destroy());
    });
    req.end(JSON.stringify(body), () => {
      if (when === "first-bytes") return;
      const poll = setInterval(() => {
        if (!when()) return;
        clearInterval(poll);
        req.destroy();
      }, 5);
    });
  });
}

/** Waits until `done` says so (at most about 10 seconds). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}
