// The gateway benchmark (issue 4): the fake engine called directly versus through Zona, in one run.
// `npm run bench`; see bench/README.md. Settings come from the environment:
//   BENCH_DURATION      seconds of each measured load run (default 10)
//   BENCH_WARMUP        seconds of the warm-up before each one (default 2)
//   BENCH_CONCURRENCY   connections, comma-separated (default 1,16,64,256)
//   BENCH_STREAMS       concurrent streams, comma-separated (default 1,16)
//   BENCH_STREAM_ROUNDS rounds of streams per level (default 8 for one stream, 3 otherwise)
//   BENCH_KEYS          API keys issued before the first run (default 400; more are issued as needed)
//   BENCH_FLOOR         requests of the billing-floor measurement at the end (default 300; 0: skip)
//   BENCH_STACK_FLOOR   0 to skip the stack-floor runs (a bare Fastify + undici proxy on Zona's core)
//   BENCH_PIN           0 to run without taskset pinning
//   BENCH_OUT           where the JSON goes (default bench/results/latest.json)
//   BENCH_PROFILE       a folder: Zona's CPU is profiled (over its inspector) during each measured
//                       run through it, into zona-c<concurrency>.cpuprofile there; summarise one
//                       with `npx node bench/profile-summary.ts <file>`. Profiling slows Zona down:
//                       keep such a run's figures out of the report.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, release, totalmem } from "node:os";
import { dirname, resolve } from "node:path";
import type { FloorResult } from "./billing-floor.ts";
import { canPin, cleanUp, pinSelf, startNode } from "./children.ts";
import { startEngine } from "./engine.ts";
import { KeyPool } from "./key-pool.ts";
import { CHAT_BODY, type LoadResult, type LoadTarget, runLoad } from "./load.ts";
import { RssSampler, rssMb, waitUntilIdle } from "./proc.ts";
import { RemoteProfiler } from "./remote-profiler.ts";
import {
  type BenchResults,
  checkTargets,
  compareLoad,
  compareStreams,
  type LoadComparison,
  markdown,
  type StreamComparison,
} from "./report.ts";
import { startStackFloor } from "./stack-floor.ts";
import { median, round3 } from "./stats.ts";
import { closeStreamClient, runStreams } from "./streams.ts";
import { issueKeys, type StartedZona, startZona, warmKey } from "./zona.ts";

const ROOT = resolve(import.meta.dirname, "..");
// Below the endpoint limit of 60 per minute and key, with room for the requests autocannon builds
// ahead of sending them.
// The config raises the chat endpoint limit (rate_limits.endpoint_limits), so one key carries the
// whole run, as one busy client would; the pool only matters with the spec's 60 per minute.
const PER_KEY_AND_WINDOW = 100_000_000;
const KEY_WINDOW_MS = 62_000;

const settings = {
  durationS: positive("BENCH_DURATION", 10),
  warmupS: positive("BENCH_WARMUP", 2),
  concurrency: list("BENCH_CONCURRENCY", [1, 16, 64, 256]),
  streams: list("BENCH_STREAMS", [1, 16]),
  streamRounds: process.env.BENCH_STREAM_ROUNDS ? positive("BENCH_STREAM_ROUNDS", 3) : undefined,
  initialKeys: positive("BENCH_KEYS", 400),
  floorRequests: process.env.BENCH_FLOOR === "0" ? 0 : positive("BENCH_FLOOR", 300),
  stackFloor: process.env.BENCH_STACK_FLOOR !== "0",
  pin: process.env.BENCH_PIN !== "0" && canPin(availableParallelism()),
  out: resolve(ROOT, process.env.BENCH_OUT ?? "bench/results/latest.json"),
  profileDir: process.env.BENCH_PROFILE ? resolve(ROOT, process.env.BENCH_PROFILE) : undefined,
};

// The stack floor takes Zona's core: it is measured in Zona's place and idles while Zona is measured.
const CORE = { zona: 0, stackFloor: 0, engine: 1, loadGenerator: 1 };
// Set once the children are being stopped on purpose: only an exit before that is news.
let stopping = false;

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  if (settings.pin) pinSelf(CORE.loadGenerator);
  log(
    settings.pin
      ? `cores: Zona${settings.stackFloor ? " and the stack floor" : ""} on CPU ${CORE.zona}; ` +
          `fake engine and load generator on CPU ${CORE.engine}`
      : "cores: not pinned (taskset missing, one core, or BENCH_PIN=0)",
  );
  const engine = await startEngine({ cpu: settings.pin ? CORE.engine : undefined, cwd: ROOT });
  log(`fake engine at ${engine.url} (pid ${engine.child.pid})`);
  const zona = await startZona({
    engineUrl: engine.url,
    cpu: settings.pin ? CORE.zona : undefined,
    cwd: ROOT,
    ...(settings.profileDir ? { nodeArgs: ["--inspect=127.0.0.1:0"] } : {}),
  });
  log(`zona at ${zona.url} (pid ${zona.child.pid})`);
  const stackFloor = settings.stackFloor
    ? await startStackFloor({
        engineUrl: engine.url,
        cpu: settings.pin ? CORE.stackFloor : undefined,
        cwd: ROOT,
      })
    : undefined;
  if (stackFloor) log(`stack floor at ${stackFloor.url} (pid ${stackFloor.child.pid})`);
  const profiler = settings.profileDir ? await RemoteProfiler.connect(zona.child.output()) : undefined;
  for (const child of [engine.child, zona.child, ...(stackFloor ? [stackFloor.child] : [])]) {
    void child.exited.then((code) => {
      if (!stopping)
        log(`${child.name} exited during the run (${code}); its last output:\n${child.output()}`);
    });
  }

  const warm = (secret: string) => void warmKey(zona.url, secret).catch(() => {});
  const zonaPool = new KeyPool({ perWindow: PER_KEY_AND_WINDOW, windowMs: KEY_WINDOW_MS, warm });
  // The engine ignores keys; the direct runs still rotate them so the load generator does the same work.
  const directPool = new KeyPool({ perWindow: PER_KEY_AND_WINDOW, windowMs: 0 });
  directPool.add(Array.from({ length: 16 }, (_, i) => `sk-direct-${String(i).padStart(40, "0")}`));
  const issued = await issueKeys(zona, settings.initialKeys);
  zonaPool.add(issued.secrets);
  log(`issued ${issued.secrets.length} API keys`);
  await checkOnce(engine.url, zona, zonaPool, stackFloor?.url);

  await sleep(1000);
  const idleMb = await idleRss(zona.child.pid);
  log(`zona RSS idle: ${idleMb.toFixed(1)} MB`);

  const cpuPids: Record<string, number> = {
    zona: zona.child.pid,
    ...(stackFloor ? { floor: stackFloor.child.pid } : {}),
    engine: engine.child.pid,
    loadGenerator: process.pid,
  };
  // Zona and the floor share a core: before each run both must have worked off the previous one.
  const untilIdle = () =>
    Promise.all(
      [zona.child.pid, ...(stackFloor ? [stackFloor.child.pid] : [])].map((pid) => waitUntilIdle(pid)),
    );
  const targets: LoadTarget[] = stackFloor ? ["direct", "floor", "zona"] : ["direct", "zona"];
  const urls: Record<LoadTarget, string> = {
    direct: engine.url,
    floor: stackFloor?.url ?? "",
    zona: zona.url,
  };
  const load: LoadComparison[] = [];
  for (const concurrency of settings.concurrency) {
    const runs: Partial<Record<LoadTarget, LoadResult>> = {};
    for (const target of targets) {
      const url = urls[target];
      // The floor ignores keys, as the engine does: it gets the same rotating dummy keys.
      const pool = target === "zona" ? zonaPool : directPool;
      await untilIdle();
      const warmup = await runLoad({ target, url, concurrency, durationS: settings.warmupS, pool, cpuPids });
      if (target === "zona") await topUpKeys(zona, issued.accountId, zonaPool, warmup.requestsPerSecond);
      await untilIdle();
      const profiling = target === "zona" ? profiler : undefined;
      await profiling?.start();
      const run = await runLoad({
        target,
        url,
        concurrency,
        durationS: settings.durationS,
        pool,
        cpuPids,
        ...(target === "zona" ? { rssPid: zona.child.pid } : {}),
      });
      runs[target] = run;
      if (profiling && settings.profileDir) {
        const file = resolve(settings.profileDir, `zona-c${concurrency}.cpuprofile`);
        mkdirSync(settings.profileDir, { recursive: true });
        writeFileSync(file, JSON.stringify(await profiling.stop()));
        log(`profile of Zona: ${file}`);
      }
      log(
        `c=${concurrency} ${target.padEnd(6)} ${run.requestsPerSecond} req/s, p50 ${run.p50Ms} ms, ` +
          `p99 ${run.p99Ms} ms, errors ${run.errors} (timeouts ${run.timeouts}), non-2xx ${run.non2xx}, ` +
          `cpu ${JSON.stringify(run.cpuPercent)}`,
      );
    }
    if (runs.direct && runs.zona) load.push(compareLoad(runs.direct, runs.zona, runs.floor));
  }

  const streaming: StreamComparison[] = [];
  await waitUntilIdle(zona.child.pid);
  const streamRss = new RssSampler(zona.child.pid);
  for (const concurrent of settings.streams) {
    const rounds = settings.streamRounds ?? (concurrent === 1 ? 8 : 3);
    const direct = await runStreams({
      target: "direct",
      url: engine.url,
      concurrent,
      rounds,
      pool: directPool,
    });
    const through = await runStreams({
      target: "zona",
      url: zona.url,
      concurrent,
      rounds,
      pool: zonaPool,
      warm: (secret) => warmKey(zona.url, secret),
    });
    const comparison = compareStreams(direct, through);
    streaming.push(comparison);
    log(
      `streams=${concurrent}: TTFT p50 ${direct.ttftP50Ms} -> ${through.ttftP50Ms} ms, ` +
        `gap p99 ${direct.gapP99Ms} -> ${through.gapP99Ms} ms, failures ${direct.failures}/${through.failures}`,
    );
  }
  const streamRssMax = streamRss.stop();
  profiler?.close();
  await closeStreamClient();
  stopping = true;
  await stackFloor?.child.stop();
  await zona.child.stop();
  await engine.child.stop();

  let billingFloor: FloorResult[] | undefined;
  if (settings.floorRequests > 0) {
    billingFloor = await runBillingFloor(settings.floorRequests, settings.pin ? CORE.zona : undefined);
    for (const floor of billingFloor) {
      log(
        `billing floor (${floor.store}): ${floor.cpuMsPerRequest} ms CPU per request, ` +
          `${floor.sequentialPerSecond}/s one at a time, ${floor.concurrent16PerSecond}/s 16 at a time`,
      );
    }
  }

  const maxUnderLoadMb = round3(Math.max(streamRssMax, ...load.map((level) => level.zona.zonaRssMaxMb ?? 0)));
  const results: BenchResults = {
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: {
      // All cores of the machine: availableParallelism() would count only the one this process is pinned to.
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      memoryGb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      kernel: release(),
    },
    cores: {
      ...(settings.pin
        ? { zona: "CPU 0", engine: "CPU 1", loadGenerator: "CPU 1" }
        : { zona: "any", engine: "any", loadGenerator: "any" }),
      ...(stackFloor ? { stackFloor: settings.pin ? "CPU 0" : "any" } : {}),
    },
    settings: {
      durationS: settings.durationS,
      warmupS: settings.warmupS,
      concurrency: settings.concurrency,
      streams: settings.streams,
      pipelining: 1,
      stackFloor: settings.stackFloor,
      body: JSON.parse(CHAT_BODY.toString("utf8")) as unknown,
      fake: { chunks: 64, chunkDelayMs: 20 },
    },
    keys: { issued: zonaPool.size, overdrawn: zonaPool.overdrawn, perKeyAndWindow: PER_KEY_AND_WINDOW },
    rss: { idleMb: round3(idleMb), maxUnderLoadMb },
    load,
    streaming,
    ...(billingFloor ? { billingFloor } : {}),
    targets: checkTargets(load, maxUnderLoadMb),
  };
  mkdirSync(dirname(settings.out), { recursive: true });
  writeFileSync(settings.out, `${JSON.stringify(results, null, 2)}\n`);
  formatLikeTheRepo(settings.out);
  process.stdout.write(`\n${markdown(results)}\n\nresults: ${settings.out}\n`);
}

/** One request each way before measuring, so a broken setup fails loudly instead of measuring errors. */
async function checkOnce(
  engineUrl: string,
  zona: StartedZona,
  pool: KeyPool,
  floorUrl: string | undefined,
): Promise<void> {
  for (const [url, key] of [
    [engineUrl, "unused"],
    ...(floorUrl ? ([[floorUrl, "unused"]] as const) : []),
    [zona.url, pool.next()],
  ] as const) {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: CHAT_BODY,
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text}`);
  }
}

/** Issues more keys when the coming run would use them up faster than the limiter's window frees them. */
async function topUpKeys(
  zona: StartedZona,
  accountId: string,
  pool: KeyPool,
  perSecond: number,
): Promise<void> {
  const missing = pool.keysFor(perSecond) - pool.size;
  if (missing <= 0) return;
  const more = await issueKeys(zona, missing, accountId);
  pool.add(more.secrets);
  log(`issued ${missing} more API keys (${pool.size} in all)`);
}

/** Runs bench/billing-floor.ts on Zona's core (Zona has stopped by then) and reads its JSON line. */
async function runBillingFloor(requests: number, cpu: number | undefined): Promise<FloorResult[]> {
  const child = startNode("billing-floor", ["bench/billing-floor.ts", String(requests)], {
    cpu,
    cwd: ROOT,
    env: process.env,
  });
  let stdout = "";
  child.process.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  const code = await child.exited;
  const line = stdout.split("\n").find((text) => text.startsWith("["));
  if (code !== 0 || !line) throw new Error(`billing floor failed (${code}):\n${child.output()}`);
  return JSON.parse(line) as FloorResult[];
}

/** Formats the JSON as `npm run format` would, so that a fresh run leaves `npm run lint` clean. */
function formatLikeTheRepo(file: string): void {
  try {
    execFileSync(resolve(ROOT, "node_modules/.bin/biome"), ["format", "--write", file], { stdio: "ignore" });
  } catch {
    // Without Biome the file is still valid JSON.
  }
}

async function idleRss(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMb(pid) ?? Number.NaN);
    await sleep(200);
  }
  return median(samples);
}

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!(value > 0)) throw new Error(`${name} must be a number above 0, got "${raw}"`);
  return value;
}

function list(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const values = raw.split(",").map((part) => Number(part.trim()));
  if (values.some((value) => !Number.isInteger(value) || value <= 0)) {
    throw new Error(`${name} must list whole numbers above 0, got "${raw}"`);
  }
  return values;
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

main()
  .then(async () => {
    await cleanUp();
    process.exit(0);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(
      `bench: failed: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
    );
    stopping = true;
    await cleanUp();
    process.exit(1);
  });
