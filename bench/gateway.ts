// The gateway benchmark: the fake engine called directly, through the stack floor (a bare Fastify
// + undici proxy) and through Zona, in one run, Zona with an unlimited key and, each through a Zona of
// its own, the keys that hold money (a monthly limit; a prepaid installation); then Zona restarted
// on its data.
// `npm run bench`; see bench/README.md, and bench/settings.ts for the BENCH_* variables. Zona's
// storage is what DATABASE_URL and REDIS_URL say (neither: embedded).
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, release, totalmem } from "node:os";
import { dirname, resolve } from "node:path";
import { dummyPool, keyedZona, MONTHLY_LIMIT, PER_KEY_AND_WINDOW, PREPAID_BALANCE } from "./accounts.ts";
import type { FloorResult } from "./billing-floor.ts";
import { type Child, cleanUp, pinSelf, startNode } from "./children.ts";
import type { LoadComparison, StreamComparison } from "./comparisons.ts";
import { startEngine } from "./engine.ts";
import { CHAT_BODY } from "./load.ts";
import { idleRssMb, RssSampler, waitUntilIdle } from "./proc.ts";
import { RedisTime } from "./redis-time.ts";
import { RemoteProfiler } from "./remote-profiler.ts";
import { type BenchResults, compareLoad, compareStreams, markdown } from "./report.ts";
import { type RestartResult, restartZona } from "./restart.ts";
import {
  type BilledZonas,
  billedOf,
  loadLevel,
  type RunContext,
  runTargets,
  streamLevel,
  streamSummary,
} from "./runs.ts";
import { readSettings } from "./settings.ts";
import { startStackFloor } from "./stack-floor.ts";
import { round3 } from "./stats.ts";
import { closeStreamClient } from "./streams.ts";
import { checkBilledTargets, checkGatewayTargets, checkStackFloorTargets } from "./targets.ts";
import { type StartedZona, startZona } from "./zona.ts";

const ROOT = resolve(import.meta.dirname, "..");

const settings = readSettings(ROOT);

// The stack floor and the billed targets' Zonas take Zona's core: each is measured in Zona's place
// and idles while another is measured.
const CORE = { zona: 0, stackFloor: 0, engine: 1, loadGenerator: 1 };
// Set once the children are being stopped on purpose: only an exit before that is news (a child
// stopped on its own, as Zona for its restart, says so with stopRequested).
let stopping = false;

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  if (settings.pin) pinSelf(CORE.loadGenerator);
  log(
    settings.pin
      ? `cores: Zona${settings.stackFloor ? ", the stack floor" : ""}${settings.billed ? ", the billed targets' Zonas" : ""} ` +
          `on CPU ${CORE.zona}; fake engine and load generator on CPU ${CORE.engine}`
      : "cores: not pinned (taskset missing, one core, or BENCH_PIN=0)",
  );
  const engine = await startEngine({ cpu: settings.pin ? CORE.engine : undefined, cwd: ROOT });
  log(`fake engine at ${engine.url} (pid ${engine.child.pid})`);
  log(
    `storage: ${settings.storage.mode} (${settings.storage.database}, counters in ${settings.storage.counters})`,
  );
  // Replaced by the restarted Zona at the end.
  let zona = await startBenchZona(engine.url, false);
  log(`zona at ${zona.url} (pid ${zona.child.pid})`);
  // Measured as after the restart, before any work: "idle right after the very first start".
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
  const profiler = await profilerOf(zona);
  for (const child of [engine.child, zona.child, ...(stackFloor ? [stackFloor.child] : [])]) watch(child);

  const unlimited = await keyedZona(zona, settings.initialKeys);
  log(`issued ${unlimited.pool.size} API keys`);
  const directPool = dummyPool();
  await checkOnce([
    [engine.url, "unused"],
    ...(stackFloor ? ([[stackFloor.url, "unused"]] as const) : []),
    [zona.url, unlimited.pool.next()],
  ]);

  const idleAfterKeysMb = await idleRssMb(zona.child.pid);
  log(`zona RSS idle after issuing the keys: ${idleAfterKeysMb.toFixed(1)} MB`);
  // After the first Zona's idle figures: the billed Zonas' starts must not be in them.
  const billed = settings.billed ? await startBilled(engine.url) : undefined;
  const limitZona = billed?.limit.zona;
  const prepaidZona = billed?.prepaid.zona;

  const redisTime = settings.redisUrl ? new RedisTime(settings.redisUrl) : undefined;
  // The Zonas and the floor share a core: before each run all must have worked off the previous one.
  const sharing = [zona.child.pid, stackFloor?.child.pid, limitZona?.child.pid, prepaidZona?.child.pid];
  const context: RunContext = {
    warmupS: settings.warmupS,
    durationS: settings.durationS,
    rounds: settings.rounds,
    untilIdle: () => Promise.all(sharing.flatMap((pid) => (pid ? [waitUntilIdle(pid)] : []))),
    profileDir: settings.profileDir,
    ...(redisTime ? { redisTime } : {}),
    log,
  };
  const targets = runTargets({
    engineUrl: engine.url,
    engine: engine.child,
    stackFloor,
    directPool,
    unlimited,
    billed,
    profiler,
  });
  const load: LoadComparison[] = [];
  for (const concurrency of settings.concurrency) {
    const { median: runs, rounds } = await loadLevel(targets, concurrency, context);
    if (runs.direct && runs.zona) {
      load.push(compareLoad(runs.direct, runs.zona, runs.floor, billedOf(runs), rounds));
    }
  }

  const streaming: StreamComparison[] = [];
  await context.untilIdle();
  const streamRss = new RssSampler(zona.child.pid);
  const limitStreamRss = limitZona ? new RssSampler(limitZona.child.pid) : undefined;
  const prepaidStreamRss = prepaidZona ? new RssSampler(prepaidZona.child.pid) : undefined;
  for (const concurrent of settings.streams) {
    const rounds = concurrent === 1 ? settings.streamRounds.oneStream : settings.streamRounds.more;
    const runs = await streamLevel(targets, concurrent, rounds, context);
    if (!runs.direct || !runs.zona) continue;
    streaming.push(compareStreams(runs.direct, runs.zona, runs.floor, billedOf(runs)));
    log(`streams=${concurrent}: ${streamSummary(runs)}`);
  }
  const streamRssMax = streamRss.stop();
  const limitStreamRssMax = limitStreamRss?.stop();
  const prepaidStreamRssMax = prepaidStreamRss?.stop();
  profiler?.close();
  redisTime?.close();
  billed?.limitProfiler?.close();
  billed?.prepaidProfiler?.close();
  await closeStreamClient();
  await stackFloor?.child.stop();
  await limitZona?.child.stop();
  await prepaidZona?.child.stop();

  // Start-up on an existing data folder (or database): Zona alone on its core, the engine still up.
  let restart: RestartResult | { error: string };
  try {
    const restarted = await restartZona(zona, unlimited.pool.next());
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

  // The unlimited key's Zona under every run through it; each billed target's Zona apart.
  const maxUnderLoadMb = round3(Math.max(streamRssMax, ...load.map((level) => level.zona.zonaRssMaxMb ?? 0)));
  const billedMaxMb = (kind: "limit" | "prepaid", streamMax: number | undefined) =>
    streamMax === undefined
      ? undefined
      : round3(Math.max(streamMax, ...load.map((level) => level.billed?.[kind]?.run.zonaRssMaxMb ?? 0)));
  const limitMaxUnderLoadMb = billedMaxMb("limit", limitStreamRssMax);
  const prepaidMaxUnderLoadMb = billedMaxMb("prepaid", prepaidStreamRssMax);
  const pinnedTo = (core: number) => (settings.pin ? `CPU ${core}` : "any");
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
      zona: pinnedTo(CORE.zona),
      engine: pinnedTo(CORE.engine),
      loadGenerator: pinnedTo(CORE.loadGenerator),
      ...(stackFloor ? { stackFloor: pinnedTo(CORE.stackFloor) } : {}),
      ...(billed ? { limitZona: pinnedTo(CORE.zona), prepaidZona: pinnedTo(CORE.zona) } : {}),
    },
    settings: {
      durationS: settings.durationS,
      warmupS: settings.warmupS,
      rounds: settings.rounds,
      concurrency: settings.concurrency,
      streams: settings.streams,
      streamRounds: settings.streamRounds,
      pipelining: 1,
      stackFloor: settings.stackFloor,
      billed: billed
        ? { monthlyLimit: MONTHLY_LIMIT, prepaidBalance: PREPAID_BALANCE, currency: "CHF" }
        : false,
      body: JSON.parse(CHAT_BODY.toString("utf8")) as unknown,
      fake: { chunks: 64, chunkDelayMs: 20 },
    },
    keys: {
      issued: unlimited.pool.size,
      overdrawn: unlimited.pool.overdrawn,
      perKeyAndWindow: PER_KEY_AND_WINDOW,
      ...(billed
        ? {
            billed: {
              limit: { issued: billed.limit.pool.size, overdrawn: billed.limit.pool.overdrawn },
              prepaid: { issued: billed.prepaid.pool.size, overdrawn: billed.prepaid.pool.overdrawn },
            },
          }
        : {}),
    },
    storage: settings.storage,
    rss: {
      idleMb: round3(idleMb),
      idleAfterKeysMb: round3(idleAfterKeysMb),
      ...("error" in restart ? {} : { idleAfterRestartMb: restart.idleMb }),
      maxUnderLoadMb,
      ...(limitMaxUnderLoadMb === undefined ? {} : { limitMaxUnderLoadMb }),
      ...(prepaidMaxUnderLoadMb === undefined ? {} : { prepaidMaxUnderLoadMb }),
    },
    restart,
    load,
    streaming,
    ...(billingFloor ? { billingFloor } : {}),
    targets: checkGatewayTargets(load, maxUnderLoadMb),
    targetsStackFloor: checkStackFloorTargets({
      load,
      streaming,
      storage: settings.storage,
      rss: { idleMb, maxUnderLoadMb },
      restart: "error" in restart ? undefined : restart,
    }),
    ...(billed ? { targetsBilled: checkBilledTargets(load, streaming) } : {}),
  };
  mkdirSync(dirname(settings.out), { recursive: true });
  writeFileSync(settings.out, `${JSON.stringify(results, null, 2)}\n`);
  formatLikeTheRepo(settings.out);
  process.stdout.write(`\n${markdown(results)}\n\nresults: ${settings.out}\n`);
}

/**
 * Starts a Zona as `npm start` does, on Zona's core, with the benchmark's node options (and the
 * inspector when profiling); `prepaid`: on a prepaid installation (the prepaid target's Zona).
 */
function startBenchZona(engineUrl: string, prepaid: boolean, name = "zona"): Promise<StartedZona> {
  return startZona({
    engineUrl,
    cpu: settings.pin ? CORE.zona : undefined,
    cwd: ROOT,
    nodeArgs: [...settings.zonaArgs, ...(settings.profileDir ? ["--inspect=127.0.0.1:0"] : [])],
    prepaid,
    name,
  });
}

/** Connects to a Zona's inspector when profiling (BENCH_PROFILE). */
function profilerOf(zona: StartedZona): Promise<RemoteProfiler> | undefined {
  return settings.profileDir ? RemoteProfiler.connect(zona.child.output(), settings.profileKind) : undefined;
}

/**
 * The billed targets, each on a Zona of its own started as the first one, on the same core: keys
 * with a monthly limit on a postpaid installation, and an account with credits on a prepaid one.
 */
async function startBilled(engineUrl: string): Promise<BilledZonas> {
  const limitZona = await startBenchZona(engineUrl, false, "zona-limit");
  watch(limitZona.child);
  log(`zona for keys with a monthly limit at ${limitZona.url} (pid ${limitZona.child.pid})`);
  const limit = await keyedZona(limitZona, settings.initialKeys, { monthlyLimit: MONTHLY_LIMIT });
  log(`issued ${limit.pool.size} API keys with a monthly limit of ${MONTHLY_LIMIT.toLocaleString("en-US")}`);
  const prepaidZona = await startBenchZona(engineUrl, true, "zona-prepaid");
  watch(prepaidZona.child);
  log(`prepaid zona at ${prepaidZona.url} (pid ${prepaidZona.child.pid})`);
  const prepaid = await keyedZona(prepaidZona, settings.initialKeys, { credits: PREPAID_BALANCE });
  log(
    `prepaid account with ${PREPAID_BALANCE.toLocaleString("en-US")} of credits, ${prepaid.pool.size} API keys`,
  );
  await checkOnce([
    [limitZona.url, limit.pool.next()],
    [prepaidZona.url, prepaid.pool.next()],
  ]);
  return {
    limit,
    prepaid,
    limitProfiler: await profilerOf(limitZona),
    prepaidProfiler: await profilerOf(prepaidZona),
  };
}

/** One request each way before measuring, so a broken setup fails loudly instead of measuring errors. */
async function checkOnce(calls: ReadonlyArray<readonly [url: string, key: string]>): Promise<void> {
  for (const [url, key] of calls) {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: CHAT_BODY,
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text}`);
  }
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
