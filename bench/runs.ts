// The measured runs of one level: every target in turn (direct, stack floor, then the targets through
// Zona: the unlimited key and the billed targets), each once the Zona processes and the floor have
// worked off the previous run; with several rounds (BENCH_ROUNDS), the whole order again each round,
// and each target's median run kept (a machine whose speed drifts then tilts no target). Each round
// starts the targets through Zona one further along (round 2: limit, prepaid, unlimited), so that no
// target always runs first or last; the billed targets are compared with the unlimited key of the
// same round. Streams interleave the same way: every round of streams runs every target in turn.
import { mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { type KeyedZona, topUpKeys } from "./accounts.ts";
import type { Child, Listening } from "./children.ts";
import type { Billed } from "./comparisons.ts";
import type { KeyPool } from "./key-pool.ts";
import { type LoadResult, type LoadTarget, runLoad } from "./load.ts";
import type { CpuPids } from "./proc.ts";
import type { RedisTime } from "./redis-time.ts";
import type { RemoteProfiler } from "./remote-profiler.ts";
import { type StreamResult, StreamSamples } from "./streams.ts";
import { warmKey } from "./zona.ts";

/** A target of the runs and what measuring it takes. */
export interface RunTarget {
  name: LoadTarget;
  url: string;
  pool: KeyPool;
  /**
   * The processes whose CPU each run reports: `zona` is the Zona the target goes through (the
   * unlimited key's for the engine and the floor), `otherZona` the other Zonas of the billed runs.
   */
  cpuPids: CpuPids;
  /** The Zona the target goes through: its keys are topped up and warmed, its RSS sampled. */
  through?: KeyedZona;
  /** Profiles the target's measured runs (BENCH_PROFILE). */
  profiler?: RemoteProfiler;
}

/** What every run of a benchmark shares. */
export interface RunContext {
  warmupS: number;
  durationS: number;
  /** Rounds of every target at each concurrency; each target's median run is kept. */
  rounds: number;
  /** Waits until the Zona processes and the floor are idle (they share a core). */
  untilIdle(): Promise<unknown>;
  /** Where the profiles go (BENCH_PROFILE). */
  profileDir: string | undefined;
  /** Redis's time in scripts (distributed runs): read around each run through Zona. */
  redisTime?: RedisTime;
  log(message: string): void;
}

/** The runs of one concurrency: each target's median run, and every round's runs. */
export interface LevelRuns {
  median: Partial<Record<LoadTarget, LoadResult>>;
  rounds: Array<Partial<Record<LoadTarget, LoadResult>>>;
}

/** Every target at one concurrency: a warm-up, then the measured run; `context.rounds` times. */
export async function loadLevel(
  targets: RunTarget[],
  concurrency: number,
  context: RunContext,
): Promise<LevelRuns> {
  const rounds: LevelRuns["rounds"] = [];
  for (let round = 0; round < context.rounds; round++) {
    const runs: Partial<Record<LoadTarget, LoadResult>> = {};
    for (const target of inRoundOrder(targets, round))
      runs[target.name] = await loadRun(target, concurrency, context);
    rounds.push(runs);
  }
  const median: LevelRuns["median"] = {};
  for (const { name } of targets) {
    const sorted = rounds
      .flatMap((runs) => runs[name] ?? [])
      .sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
    const middle = sorted[Math.floor((sorted.length - 1) / 2)];
    if (middle) median[name] = middle;
  }
  return { median, rounds };
}

/** The targets of a round: those not through Zona first, then those through Zona rotated by `round`. */
export function inRoundOrder(targets: RunTarget[], round: number): RunTarget[] {
  const outside = targets.filter((target) => !target.through);
  const through = targets.filter((target) => target.through);
  const shift = through.length > 0 ? round % through.length : 0;
  return [...outside, ...through.slice(shift), ...through.slice(0, shift)];
}

async function loadRun(target: RunTarget, concurrency: number, context: RunContext): Promise<LoadResult> {
  const { name, url, pool, cpuPids, through, profiler } = target;
  await context.untilIdle();
  const warmup = await runLoad({ target: name, url, concurrency, durationS: context.warmupS, pool, cpuPids });
  const more = through ? await topUpKeys(through, warmup.requestsPerSecond) : 0;
  if (more > 0) context.log(`issued ${more} more API keys for ${name} (${pool.size} in all)`);
  await context.untilIdle();
  const profiling = context.profileDir ? profiler : undefined;
  await profiling?.start();
  const redisBefore = through ? await context.redisTime?.micros() : undefined;
  const measured = await runLoad({
    target: name,
    url,
    concurrency,
    durationS: context.durationS,
    pool,
    cpuPids,
    ...(through ? { rssPid: through.zona.child.pid } : {}),
  });
  const redisAfter = redisBefore === undefined ? undefined : await context.redisTime?.micros();
  const run: LoadResult =
    redisBefore === undefined || redisAfter === undefined
      ? measured
      : {
          ...measured,
          redisMicrosPerAnswer: Math.round((redisAfter - redisBefore) / Math.max(measured.ok, 1)),
        };
  if (profiling && context.profileDir) {
    const file = resolve(context.profileDir, `${name}-c${concurrency}.${profiling.extension}`);
    mkdirSync(context.profileDir, { recursive: true });
    writeFileSync(file, JSON.stringify(await profiling.stop()));
    context.log(`profile of ${name} (${run.ok} answers): ${file}`);
  }
  context.log(
    `c=${concurrency} ${name.padEnd(12)} ${run.requestsPerSecond} req/s, p50 ${run.p50Ms} ms, ` +
      `p99 ${run.p99Ms} ms, errors ${run.errors} (timeouts ${run.timeouts}), non-2xx ${run.non2xx}, ` +
      `cpu ${JSON.stringify(run.cpuPercent)}${through ? cpuPerAnswer(run) : ""}` +
      (run.redisMicrosPerAnswer === undefined
        ? ""
        : `, Redis's script time per answer ${run.redisMicrosPerAnswer} us`),
  );
  return run;
}

/**
 * Every target at one number of concurrent streams: `rounds` rounds, each running every target in
 * turn (each once the processes of Zona's core are idle; those through Zona rotated as in
 * `loadLevel`), with a fresh key per round and target.
 * Right before its streams, each target's process answers one light request (`GET /v1/models`, not
 * billed; a 404 from the floor): a process idle for the seconds the other targets take answers its
 * next request about 2 ms later than a busy one (48 streams of one at a time, embedded: the prepaid
 * Zona, idle longest, +0.7 ms over the unlimited key, the key with a limit, right after it on the
 * same process, -1.1 ms; woken first, +0.04 and -0.4 ms), and each target must start as warm.
 */
export async function streamLevel(
  targets: RunTarget[],
  concurrent: number,
  rounds: number,
  context: RunContext,
): Promise<Partial<Record<LoadTarget, StreamResult>>> {
  const samples = new Map(targets.map((target) => [target, new StreamSamples(target.name, concurrent)]));
  for (let round = 0; round < rounds; round++) {
    for (const target of inRoundOrder(targets, round)) {
      const { url, pool } = target;
      const gathered = samples.get(target);
      if (!gathered) continue;
      const key = pool.take(concurrent);
      await context.untilIdle();
      await warmKey(url, key);
      await gathered.round(url, key);
    }
  }
  const runs: Partial<Record<LoadTarget, StreamResult>> = {};
  for (const gathered of samples.values()) runs[gathered.target] = gathered.result();
  return runs;
}

/**
 * The billed targets, each through a Zona process of its own beside the unlimited key's (the same
 * command line, on the same core): keys with a monthly limit on a postpaid installation, and the
 * account of a prepaid installation. Each Zona then idles while the other two are measured, so no
 * target runs on a process kept busier than the others'.
 */
export interface BilledZonas {
  limit: KeyedZona;
  prepaid: KeyedZona;
  limitProfiler: RemoteProfiler | undefined;
  prepaidProfiler: RemoteProfiler | undefined;
}

/**
 * The targets in the order they run at each level (before `inRoundOrder`). `zona` in each run's
 * CPU is the Zona the target goes through (the unlimited key's for the engine and the floor);
 * `otherZona` the other Zonas together.
 */
export function runTargets(parts: {
  engineUrl: string;
  engine: Child;
  stackFloor: Listening | undefined;
  directPool: RunTarget["pool"];
  unlimited: KeyedZona;
  billed: BilledZonas | undefined;
  profiler: RemoteProfiler | undefined;
}): RunTarget[] {
  const { stackFloor, directPool, unlimited, billed, profiler } = parts;
  const zonaPids = [unlimited, ...(billed ? [billed.limit, billed.prepaid] : [])].map(
    (keyed) => keyed.zona.child.pid,
  );
  const cpuPids = (keyed: KeyedZona): CpuPids => {
    const others = zonaPids.filter((pid) => pid !== keyed.zona.child.pid);
    return {
      zona: keyed.zona.child.pid,
      ...(others.length > 0 ? { otherZona: others } : {}),
      ...(stackFloor ? { floor: stackFloor.child.pid } : {}),
      engine: parts.engine.pid,
      loadGenerator: process.pid,
    };
  };
  const atFirst = cpuPids(unlimited);
  // The floor ignores keys, as the engine does: it gets the same rotating dummy keys.
  const targets: RunTarget[] = [{ name: "direct", url: parts.engineUrl, pool: directPool, cpuPids: atFirst }];
  if (stackFloor) targets.push({ name: "floor", url: stackFloor.url, pool: directPool, cpuPids: atFirst });
  const through = (name: LoadTarget, keyed: KeyedZona, watcher: RemoteProfiler | undefined): RunTarget => ({
    name,
    url: keyed.zona.url,
    pool: keyed.pool,
    cpuPids: cpuPids(keyed),
    through: keyed,
    ...(watcher ? { profiler: watcher } : {}),
  });
  targets.push(through("zona", unlimited, profiler));
  if (billed) {
    targets.push(
      through("zona-limit", billed.limit, billed.limitProfiler),
      through("zona-prepaid", billed.prepaid, billed.prepaidProfiler),
    );
  }
  return targets;
}

/** The billed runs of a level, by kind. */
export function billedOf<T>(runs: Partial<Record<LoadTarget, T>>): Billed<T> {
  return { limit: runs["zona-limit"], prepaid: runs["zona-prepaid"] };
}

/** One line per level of streams: each target's TTFT p50, gap p99 and failures. */
export function streamSummary(runs: Partial<Record<LoadTarget, StreamResult>>): string {
  return Object.entries(runs)
    .map(
      ([name, run]) =>
        `${name} TTFT p50 ${run.ttftP50Ms} ms, gap p99 ${run.gapP99Ms} ms, failures ${run.failures}`,
    )
    .join("; ");
}

/** Zona's CPU per answer of a run through it, all threads and its main thread alone. */
function cpuPerAnswer(run: LoadResult): string {
  const micros = (percent: number | undefined) =>
    Math.round((((percent ?? Number.NaN) / 100) * run.durationS * 1e6) / Math.max(run.ok, 1));
  return `, Zona's CPU per answer ${micros(run.cpuPercent.zona)} us (main thread ${micros(run.cpuPercent.zonaMain)} us)`;
}
