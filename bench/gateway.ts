// The gateway benchmark (issues 4 and 16): the fake engine called directly, through the stack floor
// (a bare Fastify + undici proxy) and through Zona, in one run; then Zona restarted on its data.
// `npm run bench`; see bench/README.md, and bench/settings.ts for the BENCH_* variables. Zona's
// storage is what DATABASE_URL and REDIS_URL say (neither: embedded).
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { dirname, resolve } from "node:path";
import type { FloorResult } from "./billing-floor.ts";
import { type Child, cleanUp, pinSelf, startNode } from "./children.ts";
import { startEngine } from "./engine.ts";
import { KeyPool } from "./key-pool.ts";
import { CHAT_BODY, type LoadResult, type LoadTarget, runLoad } from "./load.ts";
import { idleRssMb, RssSampler, waitUntilIdle } from "./proc.ts";
import { RemoteProfiler } from "./remote-profiler.ts";
import {
  type BenchResults,
  compareLoad,
  compareStreams,
  type LoadComparison,
  markdown,
  type StreamComparison,
} from "./report.ts";
import { type RestartResult, restartZona } from "./restart.ts";
import { readSettings } from "./settings.ts";
import { startStackFloor } from "./stack-floor.ts";
import { round3 } from "./stats.ts";
import { closeStreamClient, runStreams, type StreamResult } from "./streams.ts";
import { checkIssue16Targets, checkTargets } from "./targets.ts";
import { issueKeys, type StartedZona, startZona, warmKey } from "./zona.ts";

const ROOT = resolve(import.meta.dirname, "..");
// Below the endpoint limit of 60 per minute and key, with room for the requests autocannon builds
// ahead of sending them.
// The config raises the chat endpoint limit (rate_limits.endpoint_limits), so one key carries the
// whole run, as one busy client would; the pool only matters with the spec's 60 per minute.
const PER_KEY_AND_WINDOW = 100_000_000;
const KEY_WINDOW_MS = 62_000;

const settings = readSettings(ROOT);

// The stack floor takes Zona's core: it is measured in Zona's place and idles while Zona is measured.
const CORE = { zona: 0, stackFloor: 0, engine: 1, loadGenerator: 1 };
// Set once the children are being stopped on purpose: only an exit before that is news (a child
// stopped on its own, as Zona for its restart, says so with stopRequested).
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
  log(
    `storage: ${settings.storage.mode} (${settings.storage.database}, counters in ${settings.storage.counters})`,
  );
  // Replaced by the restarted Zona at the end.
  let zona = await startZona({
    engineUrl: engine.url,
    cpu: settings.pin ? CORE.zona : undefined,
    cwd: ROOT,
    nodeArgs: [...settings.zonaArgs, ...(settings.profileDir ? ["--inspect=127.0.0.1:0"] : [])],
  });
  log(`zona at ${zona.url} (pid ${zona.child.pid})`);
  // Measured as after the restart, before any work: the issue's "idle right after the very first start".
  const idleMb = await idleRssMb(zona.child.pid);
  log(`zona RSS idle after the first start: ${idleMb.toFixed(1)} MB`);
  const stackFloor = settings.stackFloor
    ? await startStackFloor({
        engineUrl: engine.url,
        cpu: settings.pin ? CORE.stackFloor : undefined,
        cwd: ROOT,
      })
    : undefined;
  if (stackFloor) log(`stack floor at ${stackFloor.url} (pid ${stackFloor.child.pid})`);
  const profiler = settings.profileDir ? await RemoteProfiler.connect(zona.child.output()) : undefined;
  for (const child of [engine.child, zona.child, ...(stackFloor ? [stackFloor.child] : [])]) watch(child);

  const warm = (secret: string) => void warmKey(zona.url, secret).catch(() => {});
  const zonaPool = new KeyPool({ perWindow: PER_KEY_AND_WINDOW, windowMs: KEY_WINDOW_MS, warm });
  // The engine ignores keys; the direct runs still rotate them so the load generator does the same work.
  const directPool = new KeyPool({ perWindow: PER_KEY_AND_WINDOW, windowMs: 0 });
  directPool.add(Array.from({ length: 16 }, (_, i) => `sk-direct-${String(i).padStart(40, "0")}`));
  const issued = await issueKeys(zona, settings.initialKeys);
  zonaPool.add(issued.secrets);
  log(`issued ${issued.secrets.length} API keys`);
  await checkOnce(engine.url, zona, zonaPool, stackFloor?.url);

  const idleAfterKeysMb = await idleRssMb(zona.child.pid);
  log(`zona RSS idle after issuing the keys: ${idleAfterKeysMb.toFixed(1)} MB`);

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
  await untilIdle();
  const streamRss = new RssSampler(zona.child.pid);
  for (const concurrent of settings.streams) {
    const rounds = settings.streamRounds ?? (concurrent === 1 ? 8 : 3);
    const runs: Partial<Record<LoadTarget, StreamResult>> = {};
    // The same order as the load runs; the floor ignores keys, as the engine does.
    for (const target of targets) {
      await untilIdle();
      runs[target] = await runStreams({
        target,
        url: urls[target],
        concurrent,
        rounds,
        pool: target === "zona" ? zonaPool : directPool,
        ...(target === "zona" ? { warm: (secret: string) => warmKey(zona.url, secret) } : {}),
      });
    }
    const { direct, floor, zona: through } = runs;
    if (!direct || !through) continue;
    streaming.push(compareStreams(direct, through, floor));
    log(
      `streams=${concurrent}: TTFT p50 ${direct.ttftP50Ms} -> ${floor ? `floor ${floor.ttftP50Ms}, ` : ""}` +
        `zona ${through.ttftP50Ms} ms, gap p99 ${direct.gapP99Ms} -> ${floor ? `floor ${floor.gapP99Ms}, ` : ""}` +
        `zona ${through.gapP99Ms} ms, failures ${direct.failures}/${floor ? `${floor.failures}/` : ""}${through.failures}`,
    );
  }
  const streamRssMax = streamRss.stop();
  profiler?.close();
  await closeStreamClient();
  await stackFloor?.child.stop();

  // Start-up on an existing data folder (or database): Zona alone on its core, the engine still up.
  let restart: RestartResult | { error: string };
  try {
    const restarted = await restartZona(zona, zonaPool.next());
    zona = restarted.zona;
    watch(zona.child);
    restart = restarted.result;
    log(
      `restart: stopped in ${restart.stopMs} ms (exit ${restart.stopExitCode}), first answer ` +
        `${restart.firstAnswerMs} ms after the spawn (${restart.attempts} requests), RSS idle ${restart.idleMb} MB`,
    );
  } catch (error) {
    restart = { error: error instanceof Error ? error.message : String(error) };
    log(`restart failed: ${restart.error}`);
  }
  stopping = true;
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
      streamRounds: settings.streamRounds ?? { oneStream: 8, more: 3 },
      pipelining: 1,
      stackFloor: settings.stackFloor,
      body: JSON.parse(CHAT_BODY.toString("utf8")) as unknown,
      fake: { chunks: 64, chunkDelayMs: 20 },
    },
    keys: { issued: zonaPool.size, overdrawn: zonaPool.overdrawn, perKeyAndWindow: PER_KEY_AND_WINDOW },
    storage: settings.storage,
    rss: {
      idleMb: round3(idleMb),
      idleAfterKeysMb: round3(idleAfterKeysMb),
      ...("error" in restart ? {} : { idleAfterRestartMb: restart.idleMb }),
      maxUnderLoadMb,
    },
    restart,
    load,
    streaming,
    ...(billingFloor ? { billingFloor } : {}),
    targets: checkTargets(load, maxUnderLoadMb),
    targetsIssue16: checkIssue16Targets({
      load,
      streaming,
      storage: settings.storage,
      rss: { idleMb, maxUnderLoadMb },
      restart: "error" in restart ? undefined : restart,
    }),
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

/** Logs an exit nobody asked for: a child that dies mid-run makes the figures after it meaningless. */
function watch(child: Child): void {
  void child.exited.then((code) => {
    if (!stopping && !child.stopRequested)
      log(`${child.name} exited during the run (${code}); its last output:\n${child.output()}`);
  });
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
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
