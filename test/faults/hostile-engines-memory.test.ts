import { request as httpRequest } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostileEngineServer, type Misbehaviour } from "../fakes/hostile-engine-server.ts";
import type { TestApp } from "../helpers/test-app.ts";
import {
  ANSWER_BOUND_MS,
  ENDPOINTS,
  type Endpoint,
  eventually,
  expectedOf,
  expectShape,
  hostileMachine,
  nothingReserved,
  pricedModel,
  send,
  startHostileApp,
  usageRecord,
} from "./hostile-fixtures.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const MB = 1024 * 1024;
/** Growth allowed while a 512 MiB endless or a 200 MB huge body is refused: the JSON answer limit (64 MiB) and change. */
const PEAK_BOUND = 160 * MB;
/** What may stay in the process once the case is over. */
const RETAINED_BOUND = 32 * MB;

interface Case {
  endpoint: Endpoint;
  behaviour: Misbehaviour;
  stream: boolean;
  label: string;
}
const cases: Case[] = (
  ["openai-chat", "openai-completions", "ollama-chat", "ollama-generate"] as const
).flatMap((endpoint) =>
  (
    [
      ["endless", false],
      ["endless", true],
      ["huge", false],
    ] as const
  ).map(([behaviour, stream]) => ({
    endpoint,
    behaviour,
    stream,
    label: `${endpoint}-${behaviour}-${stream ? "s" : "n"}`,
  })),
);
const FLOOD = { endpoint: "openai-chat", label: "openai-chat-flood-s" } as const;
const WARM_UP = (["openai-chat", "openai-completions", "ollama-chat", "ollama-generate"] as const).map(
  (endpoint) => ({ endpoint, label: `${endpoint}-well` }),
);

const size = () => {
  const usage = process.memoryUsage();
  return { heap: usage.heapUsed + usage.external, rss: usage.rss };
};

/** The memory in use once garbage is collected (buffers are freed in the background, hence twice). */
async function settled(): Promise<{ heap: number; rss: number }> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 100));
  gc();
  return size();
}

/** Runs `work` while sampling the process's memory; growth is against the settled memory before it. */
async function measured<T>(work: () => Promise<T>) {
  const before = await settled();
  const peak = { ...before };
  const sampler = setInterval(() => {
    const now = size();
    peak.heap = Math.max(peak.heap, now.heap);
    peak.rss = Math.max(peak.rss, now.rss);
  }, 5);
  try {
    const result = await work();
    const last = size();
    peak.heap = Math.max(peak.heap, last.heap);
    peak.rss = Math.max(peak.rss, last.rss);
    return { result, peakHeap: peak.heap - before.heap, peakRss: peak.rss - before.rss, before };
  } finally {
    clearInterval(sampler);
  }
}

async function retainedHeap(before: { heap: number }): Promise<number> {
  return (await settled()).heap - before.heap;
}

const figures: string[] = [];

describe("hostile engines: endless and huge bodies are cut off with bounded memory, and the engine stops being read", () => {
  const hostile = new HostileEngineServer();
  let t: TestApp;

  beforeAll(async () => {
    await hostile.start();
    for (const { label, behaviour } of cases) hostile.behave(label, behaviour);
    hostile.behave(FLOOD.label, "flood");
    const all = [...cases, FLOOD, ...WARM_UP];
    t = await startHostileApp({
      models: all.map(({ label }) => pricedModel(label, "chat")),
      machines: all.map(({ label, endpoint }) =>
        hostileMachine(hostile, label, ENDPOINTS[endpoint].protocol, [label]),
      ),
    });
    // The first requests load code and fill caches: that is not growth.
    const { key } = await t.newKey();
    for (const { endpoint, label } of WARM_UP) {
      for (const stream of [false, true])
        expect((await send(t, key, endpoint, label, stream)).status).toBe(200);
    }
    await settled();
  });

  afterAll(async () => {
    await t?.close();
    await hostile.close();
    console.info(`hostile engines, memory:\n${figures.join("\n")}`);
  });

  it.each(
    cases,
  )("$endpoint $behaviour (stream: $stream): a clear error in bounded time, memory growth bounded, the engine cut off", async ({
    endpoint,
    behaviour,
    stream,
    label,
  }) => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 100 } });
    const {
      result: seen,
      peakHeap,
      peakRss,
      before,
    } = await measured(() => send(t, key, endpoint, label, stream));
    expect(seen.ms).toBeLessThan(ANSWER_BOUND_MS);
    expectShape(seen, expectedOf(behaviour, stream));

    const exchange = hostile.exchangesOf(label)[0];
    if (!exchange) throw new Error("no exchange");
    await eventually(() => (exchange.end === "open" ? undefined : true));
    // Zona hung up long before the server ran out of bytes to send.
    expect(exchange.end).toBe("closed");
    const cap = behaviour === "huge" ? hostile.settings.hugeBytes : hostile.settings.endlessCapBytes;
    expect(exchange.bytesSent).toBeLessThan(cap / 2);

    expect(peakHeap).toBeLessThan(PEAK_BOUND);
    expect(peakRss).toBeLessThan(PEAK_BOUND);
    const retained = await retainedHeap(before);
    expect(retained).toBeLessThan(RETAINED_BOUND);

    expect(await usageRecord(t, keyId, seen.requestId)).toMatchObject({ outcome: "failed", cost: 0 });
    await nothingReserved(t, keyId);
    figures.push(
      `${label}: ${seen.status} in ${Math.round(seen.ms)} ms; engine sent ${(exchange.bytesSent / MB).toFixed(1)} MiB of ${(cap / MB).toFixed(0)}; peak growth heap ${(peakHeap / MB).toFixed(1)} MiB, rss ${(peakRss / MB).toFixed(1)} MiB; retained ${(retained / MB).toFixed(1)} MiB`,
    );
  });

  it("a flood of valid events read by a client that goes away after 4 MiB: the engine is hung up on, the usage is partial, memory bounded", async () => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 100 } });
    const { result, peakHeap, peakRss, before } = await measured(() =>
      readThenHangUp(t.url, key, FLOOD.label, 4 * MB),
    );
    expect(result.bytes).toBeGreaterThanOrEqual(4 * MB);
    const exchange = hostile.exchangesOf(FLOOD.label)[0];
    if (!exchange) throw new Error("no exchange");
    await eventually(() => (exchange.end === "open" ? undefined : true));
    expect(exchange.end).toBe("closed");
    expect(peakHeap).toBeLessThan(PEAK_BOUND);
    expect(peakRss).toBeLessThan(PEAK_BOUND);
    const retained = await retainedHeap(before);
    expect(retained).toBeLessThan(RETAINED_BOUND);
    // The client only read what it read: the engine was not drained into Zona's memory behind its back.
    expect(exchange.bytesSent).toBeLessThan(result.bytes + 32 * MB);
    expect(await usageRecord(t, keyId, result.requestId)).toMatchObject({ outcome: "partial" });
    await nothingReserved(t, keyId);
    figures.push(
      `${FLOOD.label}: client read ${(result.bytes / MB).toFixed(1)} MiB and left; engine sent ${(exchange.bytesSent / MB).toFixed(1)} MiB; peak growth heap ${(peakHeap / MB).toFixed(1)} MiB, rss ${(peakRss / MB).toFixed(1)} MiB; retained ${(retained / MB).toFixed(1)} MiB`,
    );
  });
});

/** Streams a chat answer over a connection of its own, reads `bytes` of it, then hangs up. */
function readThenHangUp(
  url: string,
  key: string,
  model: string,
  bytes: number,
): Promise<{ bytes: number; requestId: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/v1/chat/completions`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      timeout: ANSWER_BOUND_MS,
    });
    req.on("error", () => {});
    req.on("timeout", () => reject(new Error("no answer in time")));
    req.on("response", (res) => {
      let read = 0;
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read < bytes) return;
        req.destroy();
        resolve({ bytes: read, requestId: String(res.headers["x-request-id"]) });
      });
    });
    req.end(JSON.stringify({ model, messages: [{ role: "user", content: "Say hello" }], stream: true }));
  });
}
