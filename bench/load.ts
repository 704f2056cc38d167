import autocannon, { type AutocannonRequest } from "autocannon";
import type { KeyPool } from "./key-pool.ts";
import { CpuMeter, type CpuPids, RssSampler } from "./proc.ts";
import { round3, Samples } from "./stats.ts";
import { BENCH_MODEL } from "./zona.ts";

/**
 * Where a load run sends its requests: the engine itself, the stack floor, or Zona with a key
 * without a monthly limit on a postpaid installation; the billed targets: the same Zona with keys
 * that have a monthly limit, and a second Zona on a prepaid installation.
 */
export type LoadTarget = "direct" | "floor" | "zona" | "zona-limit" | "zona-prepaid";

/** One load run: one target at one concurrency. */
export interface LoadResult {
  target: LoadTarget;
  concurrency: number;
  durationS: number;
  /** Answers with a 2xx status. */
  ok: number;
  requestsPerSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** autocannon's own percentiles, which it records in whole milliseconds. */
  autocannonP50Ms: number;
  autocannonP99Ms: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
  /** Percent of one core used during the run, per process. */
  cpuPercent: Record<string, number>;
  /** Largest RSS of the Zona of the run, sampled every 200 ms (runs through a Zona only). */
  zonaRssMaxMb?: number;
  /** Redis's time in scripts over the run per 2xx answer (distributed runs through a Zona only). */
  redisMicrosPerAnswer?: number;
}

/** The body of every non-streamed request: small, as an interactive call is. */
export const CHAT_BODY = Buffer.from(
  JSON.stringify({
    model: BENCH_MODEL,
    messages: [{ role: "user", content: "Say hello to the benchmark, briefly." }],
    max_tokens: 16,
  }),
);

/** Runs autocannon (no pipelining) with a fresh key from the pool on every request, and measures exact latencies. */
export async function runLoad(options: {
  target: LoadTarget;
  url: string;
  concurrency: number;
  durationS: number;
  pool: KeyPool;
  cpuPids: CpuPids;
  rssPid?: number;
}): Promise<LoadResult> {
  const { pool } = options;
  const request: AutocannonRequest = {
    method: "POST",
    path: "/v1/chat/completions",
    headers: { "content-type": "application/json" },
    body: CHAT_BODY,
    setupRequest: (built) => {
      built.headers = { ...built.headers, authorization: `Bearer ${pool.next()}` };
      return built;
    },
  };
  const latencies = new Samples();
  const cpu = new CpuMeter(options.cpuPids);
  const rss = options.rssPid === undefined ? undefined : new RssSampler(options.rssPid);
  const instance = autocannon({
    url: options.url,
    connections: options.concurrency,
    duration: options.durationS,
    pipelining: 1,
    timeout: 10,
    requests: [request],
  });
  instance.on("response", (_client: unknown, status: number, _bytes: number, responseTime: number) => {
    if (status >= 200 && status < 300) latencies.add(responseTime);
  });
  const result = await instance;
  const cpuPercent = cpu.read();
  const zonaRssMaxMb = rss?.stop();
  const [p50, p90, p99, max] = latencies.percentiles(50, 90, 99, 100);
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
  return {
    target: options.target,
    concurrency: options.concurrency,
    durationS: result.duration,
    ok: latencies.size,
    requestsPerSecond: Math.round(latencies.size / result.duration),
    p50Ms: p50 ?? Number.NaN,
    p90Ms: p90 ?? Number.NaN,
    p99Ms: p99 ?? Number.NaN,
    maxMs: max ?? Number.NaN,
    autocannonP50Ms: result.latency.p50,
    autocannonP99Ms: result.latency.p99,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCodes,
    cpuPercent,
    ...(zonaRssMaxMb === undefined ? {} : { zonaRssMaxMb: round3(zonaRssMaxMb) }),
  };
}
