import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import { Scrape } from "./scrape.ts";

const MODEL = "gemma3.8-27b";
// 1 per million input tokens, 2 per million output tokens at the slow tier.
const PRICES = { input_per_million_tokens: 1, output_per_million_tokens: 2 };

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** Two machines: ti-1 in ch-ti answers, zh-1 in ch-zh refuses connections (down). */
async function startStack() {
  const up = new FakeOpenAiServer();
  const down = new FakeOpenAiServer();
  const [a, b] = await Promise.all([up.start(), down.start()]);
  await down.setMode("refuse");
  const t = await startTestApp({
    config: {
      installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }] },
      tiers: {
        slow: { multiplier: 1, requests_per_minute: 100_000 },
        fast: { multiplier: 4, requests_per_minute: 1 },
      },
      models: [{ id: MODEL, kind: "chat", prices: PRICES }],
      machines: [
        { name: "ti-1", zone: "ch-ti", protocol: "openai", url: a.url, models: [MODEL] },
        { name: "zh-1", zone: "ch-zh", protocol: "openai", url: b.url, models: [MODEL] },
      ],
    },
  });
  return {
    t,
    async close() {
      await t.close();
      await Promise.all([a.close(), b.close()]);
    },
  };
}

function chat(
  t: TestApp,
  key: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  return t.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hello there" }], ...body }),
  });
}

async function scrape(t: TestApp): Promise<Scrape> {
  const response = await t.fetch("/admin/v1/metrics", {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect(response.status).toBe(200);
  return Scrape.parse(await response.text());
}

// Usage is written just after the answer: scrape until the written records are counted.
async function scrapeWhen(t: TestApp, ready: (s: Scrape) => boolean): Promise<Scrape> {
  let s = await scrape(t);
  for (let i = 0; i < 100 && !ready(s); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    s = await scrape(t);
  }
  return s;
}

// The usage chunk of a stream asked with include_usage (the last data event before [DONE]).
function streamedUsage(text: string): Usage {
  const events = text
    .split("\n\n")
    .map((event) => event.replace(/^data: /, "").trim())
    .filter((data) => data !== "" && data !== "[DONE]")
    .map((data) => JSON.parse(data) as { usage?: Usage | null });
  const usage = events.at(-1)?.usage;
  if (!usage) throw new Error("the stream ended without usage");
  return usage;
}

describe("/metrics parsed by a Prometheus text parser with the expected series after known traffic", () => {
  let stack: Awaited<ReturnType<typeof startStack>>;
  let s: Scrape;
  let answered: Usage[];
  let accountId: string;

  beforeAll(async () => {
    stack = await startStack();
    const { t } = stack;
    const ticino = await t.newKey({ key: { zones: ["ch-ti"] } });
    accountId = ticino.accountId;
    const zurich = await t.newKey({ key: { zones: ["ch-zh"] } });
    const limited = await t.newKey({ key: { zones: ["ch-ti"], monthly_limit: 0.001 } });

    const once = await chat(t, ticino.key);
    expect(once.status).toBe(200);
    const streamed = await chat(t, ticino.key, { stream: true, stream_options: { include_usage: true } });
    expect(streamed.status).toBe(200);
    answered = [((await once.json()) as { usage: Usage }).usage, streamedUsage(await streamed.text())];
    expect((await chat(t, zurich.key)).status).toBe(503);
    expect((await chat(t, limited.key)).status).toBe(402);
    expect((await chat(t, ticino.key, { model: "no-such-model" })).status).toBe(404);
    // The tier limit counts per key: a fresh key asking for the fast tier (1 a minute) twice.
    const fast = { authorization: `Bearer ${(await t.newKey()).key}`, "x-service-tier": "fast" };
    expect((await t.fetch("/v1/models", { headers: fast })).status).toBe(200);
    expect((await t.fetch("/v1/models", { headers: fast })).status).toBe(429);
    expect((await t.fetch("/no/such/path")).status).toBe(404);
    expect((await t.admin("GET", `/accounts/${accountId}`)).status).toBe(200);
    // Three usage records: the two answers and the 503 (released at no cost); the 402 held nothing.
    s = await scrapeWhen(t, (scraped) => scraped.histogram("zona_usage_write_lag_seconds")?.count === 3);
  });
  afterAll(() => stack.close());

  it("requests by route pattern, method, status and catalogue model; unknown models and paths stay bounded", () => {
    const route = "/v1/chat/completions";
    const requests = (status: string, model: string, path = route, method = "POST") =>
      s.value("zona_http_requests_total", { route: path, method, status, model });
    expect(requests("200", MODEL)).toBe(2);
    expect(requests("503", MODEL)).toBe(1);
    expect(requests("402", MODEL)).toBe(1);
    expect(requests("404", "")).toBe(1);
    expect(s.samples("zona_http_requests_total", { model: "no-such-model" })).toEqual([]);
    expect(requests("429", "", "/v1/models", "GET")).toBe(1);
    expect(requests("404", "", "unmatched", "GET")).toBe(1);
    expect(requests("200", "", "/admin/v1/accounts/:id", "GET")).toBe(1);
    expect(
      s.samples("zona_http_requests_total").some((sample) => sample.labels.route?.includes(accountId)),
    ).toBe(false);
    expect(s.histogram("zona_http_request_duration_seconds", { route, method: "POST" })?.count).toBe(5);
  });

  it("upstream durations by machine, zone, model and outcome; upstream errors by machine and kind", () => {
    expect(
      s.histogram("zona_upstream_request_duration_seconds", {
        machine: "ti-1",
        zone: "ch-ti",
        model: MODEL,
        outcome: "ok",
      })?.count,
    ).toBe(2);
    expect(
      s.histogram("zona_upstream_request_duration_seconds", {
        machine: "zh-1",
        zone: "ch-zh",
        model: MODEL,
        outcome: "connect",
      })?.count,
    ).toBe(1);
    expect(s.samples("zona_upstream_errors_total")).toEqual([
      { labels: { machine: "zh-1", zone: "ch-zh", kind: "connect", status: "" }, value: 1 },
    ]);
  });

  it("machines up or down (circuit open) and requests in flight on each", () => {
    expect(s.value("zona_machine_up", { machine: "ti-1", zone: "ch-ti", protocol: "openai" })).toBe(1);
    expect(s.value("zona_machine_up", { machine: "zh-1", zone: "ch-zh", protocol: "openai" })).toBe(0);
    expect(s.value("zona_machine_in_flight", { machine: "ti-1" })).toBe(0);
    expect(s.value("zona_machine_in_flight", { machine: "zh-1" })).toBe(0);
  });

  it("time to first token of the streamed answer, by model and tier", () => {
    const ttft = s.histogram("zona_time_to_first_token_seconds", { model: MODEL, tier: "slow" });
    expect(ttft?.count).toBe(1);
    expect(ttft?.sum).toBeGreaterThan(0);
  });

  it("tokens in and out and cost by model and tier, as settled", () => {
    const input = answered.reduce((sum, usage) => sum + usage.prompt_tokens, 0);
    const output = answered.reduce((sum, usage) => sum + usage.completion_tokens, 0);
    const at = { model: MODEL, tier: "slow" };
    expect(s.value("zona_tokens_total", { ...at, direction: "input" })).toBe(input);
    expect(s.value("zona_tokens_total", { ...at, direction: "output" })).toBe(output);
    expect(s.value("zona_cost_total", { ...at, currency: "CHF" })).toBeCloseTo((input + 2 * output) / 1e6, 9);
  });

  it("rate-limit refusals by limiter, billing refusals by reason, no Redis fallback", () => {
    expect(s.samples("zona_rate_limit_refused_total")).toEqual([{ labels: { limiter: "tier" }, value: 1 }]);
    expect(s.samples("zona_billing_refused_total")).toEqual([
      { labels: { reason: "spending_limit" }, value: 1 },
    ]);
    expect(s.value("zona_rate_limit_fallback_total")).toBe(0);
  });

  it("usage write lag and batch size of the group commit; background jobs waiting", () => {
    expect(s.histogram("zona_usage_write_lag_seconds")?.count).toBe(3);
    const batches = s.histogram("zona_usage_write_batch_size");
    expect(batches?.sum).toBe(3);
    expect(batches?.count).toBeGreaterThanOrEqual(1);
    // The throwaway jobs in the process, and the durable ones (video) in the embedded database.
    expect(s.samples("zona_jobs_waiting")).toEqual([
      { labels: { queue: "in-process" }, value: 0 },
      { labels: { queue: "table" }, value: 0 },
    ]);
  });

  it("the process's default metrics, under their standard names", () => {
    expect(s.value("process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(s.family("nodejs_heap_size_used_bytes").type).toBe("gauge");
    expect(s.samples("nodejs_version_info")).toHaveLength(1);
  });
});
