import { expect } from "vitest";
import type { CounterStore } from "../../src/limits/counter-store.ts";
import type { HostileEngineServer, Misbehaviour } from "../fakes/hostile-engine-server.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

/** Where a hostile case is sent: the client's endpoint, the machine's protocol and the model kind. */
export const ENDPOINTS = {
  "openai-chat": { protocol: "openai", kind: "chat", path: "/v1/chat/completions" },
  "openai-completions": { protocol: "openai", kind: "chat", path: "/v1/completions" },
  "ollama-chat": { protocol: "ollama", kind: "chat", path: "/v1/chat/completions" },
  "ollama-generate": { protocol: "ollama", kind: "chat", path: "/v1/completions" },
  "openai-embeddings": { protocol: "openai", kind: "embedding", path: "/v1/embeddings" },
  "ollama-embed": { protocol: "ollama", kind: "embedding", path: "/v1/embeddings" },
  "tei-embed": { protocol: "tei", kind: "embedding", path: "/v1/embeddings" },
} as const;
export type Endpoint = keyof typeof ENDPOINTS;

/**
 * Short engine timeouts so that every case ends within a few seconds (undici's header and body
 * timers tick every ~0.5 s, so they fire up to ~1 s late).
 */
export const FAST_ENGINES = {
  connect_timeout_ms: 500,
  first_byte_timeout_ms: 800,
  idle_timeout_ms: 800,
  probe_interval_seconds: 3600,
  probe_timeout_ms: 300,
  circuit_cooldown_seconds: 0.2,
  circuit_max_cooldown_seconds: 0.4,
};

/** Every case must have its answer (or the end of its stream) within this. */
export const ANSWER_BOUND_MS = 5_000;

// The cases send many requests per key and minute; the limits are tested in test/limits.
export const unlimitedCounters: CounterStore = {
  take: async (counters, now) => ({
    allowed: true,
    counters: counters.map(() => ({ count: 1, resetAt: now + 60_000 })),
  }),
  close: async () => {},
};

/** A priced model, so that every request reserves money against the key's monthly limit. */
export function pricedModel(id: string, kind: "chat" | "embedding") {
  return { id, kind, prices: { input_per_million_tokens: 1_000, output_per_million_tokens: 1_000 } };
}

/** A machine of the hostile server: its url carries the label that selects the misbehaviour. */
export function hostileMachine(
  hostile: HostileEngineServer,
  label: string,
  protocol: string,
  models: string[],
) {
  return { name: label, zone: "ch", protocol, url: `${hostile.url}/${label}`, models, capacity: 4 };
}

/** Starts Zona on one zone with the given models and machines, fast engine timeouts and no rate limits. */
export function startHostileApp(config: {
  models: unknown[];
  machines: unknown[];
  engines?: Record<string, unknown>;
}): Promise<TestApp> {
  return startTestApp({
    config: {
      installation: { zones: [{ id: "ch" }] },
      engines: { ...FAST_ENGINES, ...config.engines },
      models: config.models,
      machines: config.machines,
    },
    counterStore: unlimitedCounters,
  });
}

/** What the client saw. */
export interface Seen {
  status: number;
  ms: number;
  requestId: string;
  contentType: string;
  // biome-ignore lint/suspicious/noExplicitAny: answers are checked by assertions, not by types.
  json: any;
  /** The `data:` payloads of a stream, in order. */
  events: string[];
}

/** Sends one request of an endpoint for a model and reads the whole answer (a stream to its end). */
export async function send(
  t: TestApp,
  key: string,
  endpoint: Endpoint,
  model: string,
  stream: boolean,
): Promise<Seen> {
  const { kind, path } = ENDPOINTS[endpoint];
  const body =
    kind === "embedding"
      ? { model, input: ["one", "two"] }
      : path === "/v1/completions"
        ? { model, prompt: "Say hello", max_tokens: 16, stream }
        : { model, messages: [{ role: "user", content: "Say hello" }], max_tokens: 16, stream };
  const started = performance.now();
  const response = await t.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(ANSWER_BOUND_MS * 4),
  });
  const text = await response.text();
  const ms = performance.now() - started;
  const contentType = response.headers.get("content-type") ?? "";
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const events = contentType.startsWith("text/event-stream")
    ? text
        .split("\n\n")
        .filter((block) => block.startsWith("data: "))
        .map((block) => block.slice("data: ".length))
    : [];
  return {
    status: response.status,
    ms,
    requestId: response.headers.get("x-request-id") ?? "",
    contentType,
    json,
    events,
  };
}

/** How the client must see a misbehaviour. */
export type Expected = "ok" | "error" | "stream-error";

const BREAKS_AFTER_FIRST_CHUNK: ReadonlySet<Misbehaviour> = new Set([
  "cut-body",
  "bad-event-mid",
  "long-line",
  "no-done",
  "end-mid-event",
  "endless",
]);

/** Streams that break after their first chunk end in an error event; everything else fails before the answer starts. */
export function expectedOf(behaviour: Misbehaviour, stream: boolean): Expected {
  if (behaviour === "well") return "ok";
  return stream && BREAKS_AFTER_FIRST_CHUNK.has(behaviour) ? "stream-error" : "error";
}

/**
 * The spec's shapes: an error before the answer started is a JSON 502 `bad_gateway` (503
 * `model_unavailable`/`zone_unavailable` when the only failure was a broken connection, which the
 * router counts as a refusal); a stream that broke after it started keeps status 200 and ends with
 * one `error` event and no `[DONE]` (spec "Events").
 */
export function expectShape(seen: Seen, expected: Expected, brokenConnection = false): void {
  if (expected === "ok") {
    expect(seen.status).toBe(200);
    if (seen.events.length > 0) expect(seen.events.at(-1)).toBe("[DONE]");
    return;
  }
  if (expected === "error") {
    expect(seen.contentType).toMatch(/^application\/json/);
    if (brokenConnection && seen.status === 503) {
      expect(seen.json.error.type).toMatch(/^(model|zone)_unavailable$/);
    } else {
      expect(seen.status).toBe(502);
      expect(seen.json.error).toMatchObject({ type: "bad_gateway", code: "bad_gateway" });
    }
    expect(typeof seen.json.error.message).toBe("string");
    return;
  }
  expect(seen.status).toBe(200);
  expect(seen.contentType).toMatch(/^text\/event-stream/);
  expect(seen.events.length).toBeGreaterThanOrEqual(2);
  expect(seen.events).not.toContain("[DONE]");
  const last = JSON.parse(seen.events.at(-1) ?? "{}");
  expect(last.error).toMatchObject({ type: "server_error", code: "upstream_error" });
  expect(typeof last.error.message).toBe("string");
  for (const event of seen.events.slice(0, -1)) expect(JSON.parse(event).error).toBeUndefined();
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 3_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not so within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The usage record of a request (usage is written in the background, so it is waited for). */
// biome-ignore lint/suspicious/noExplicitAny: records are checked by assertions, not by types.
export function usageRecord(t: TestApp, keyId: string, requestId: string): Promise<any> {
  return eventually(async () => {
    const records = (await t.admin("GET", `/usage?key_id=${keyId}&limit=1000`)).body.data as Array<{
      request_id: string;
    }>;
    return records.find((record) => record.request_id === requestId);
  });
}

/** Waits until the key holds no reservation (a released or settled request frees its hold). */
export function nothingReserved(t: TestApp, keyId: string): Promise<true> {
  return eventually(async () => {
    const summary = await t.admin("GET", `/usage/summary?key_id=${keyId}`);
    return summary.body.key_spend.reserved === 0 ? true : undefined;
  });
}

/** A machine as `GET /admin/v1/machines` shows it. */
// biome-ignore lint/suspicious/noExplicitAny: views are checked by assertions, not by types.
export async function machineView(t: TestApp, name: string): Promise<any> {
  const list = await t.admin("GET", "/machines");
  return (list.body.data as Array<{ name: string }>).find((machine) => machine.name === name);
}

/** `zona_machine_up` of a machine in the operator's metrics: 1 up, 0 down. */
export async function machineUp(t: TestApp, name: string): Promise<number> {
  const text = await (
    await t.fetch("/admin/v1/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  ).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith("zona_machine_up{") && l.includes(`machine="${name}"`));
  return Number(line?.split(" ").at(-1));
}
