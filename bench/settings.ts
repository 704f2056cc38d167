// The settings of the gateway benchmark (bench/gateway.ts), from the environment:
//   BENCH_DURATION      seconds of each measured load run (default 10)
//   BENCH_WARMUP        seconds of the warm-up before each one (default 2)
//   BENCH_ROUNDS        rounds of every target at each concurrency, the median run of each kept (default 1)
//   BENCH_CONCURRENCY   connections, comma-separated (default 1,16,64,256)
//   BENCH_STREAMS       concurrent streams, comma-separated (default 1,16)
//   BENCH_STREAM_ROUNDS rounds of streams per level (default 48 for one stream, 3 otherwise)
//   BENCH_KEYS          API keys issued before the first run, for each pool (the unlimited key's and
//                       each billed target's; default 400; more are issued as needed)
//   BENCH_FLOOR         requests of the billing-floor measurement at the end (default 300; 0: skip)
//   BENCH_STACK_FLOOR   0 to skip the stack-floor runs (a bare Fastify + undici proxy on Zona's core)
//   BENCH_BILLED        0 to skip the billed runs: keys with a monthly limit on the same Zona, and
//                       a second Zona on a prepaid installation (money at full speed)
//   BENCH_PIN           0 to run without taskset pinning
//   BENCH_CHILD_LOG     a folder that keeps each child process's whole output (Zona's log lines)
//   BENCH_OUT           where the JSON goes (default bench/results/latest.json)
//   BENCH_PROFILE       a folder: each Zona's CPU is profiled (over its inspector) during each
//                       measured run through it, into <target>-c<concurrency>.cpuprofile there
//                       (zona, zona-limit, zona-prepaid); summarise one
//                       with `npx node bench/profile-summary.ts <file>`. Profiling slows Zona down:
//                       keep such a run's figures out of the report.
//   BENCH_PROFILE_KIND  heap: the profiles sample allocations instead (every byte allocated, also
//                       what the next scavenge frees), into <target>-c<concurrency>.heapprofile;
//                       summarise one per answer with `npx node bench/heap-summary.ts <file> <answers>`;
//                       live: what of it is still in the heap when the run ends (promoted and not yet
//                       collected included), into <target>-c<concurrency>.live.heapprofile;
//                       gc: each garbage collection (kind, main-thread time, heap spaces before and
//                       after), into <target>-c<concurrency>.gcprofile.json; per answer with
//                       `npx node bench/gc-summary.ts <file> <answers>`
//   DATABASE_URL, REDIS_URL  passed on to Zona, and to the prepaid Zona of the billed runs (neither:
//                       embedded; both: distributed); the RSS limits of the targets against the
//                       stack floor depend on them; with REDIS_URL each run through Zona also logs
//                       Redis's time in scripts per answer (INFO commandstats around the run)
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import { canPin } from "./children.ts";
import type { ProfileKind } from "./remote-profiler.ts";
import { storageOf } from "./targets.ts";

/** The settings of a run, from the BENCH_* variables; paths resolved against `root`. */
export function readSettings(root: string) {
  return {
    durationS: positive("BENCH_DURATION", 10),
    warmupS: positive("BENCH_WARMUP", 2),
    rounds: positive("BENCH_ROUNDS", 1),
    concurrency: list("BENCH_CONCURRENCY", [1, 16, 64, 256]),
    streams: list("BENCH_STREAMS", [1, 16]),
    streamRounds: streamRounds(),
    initialKeys: positive("BENCH_KEYS", 400),
    floorRequests: process.env.BENCH_FLOOR === "0" ? 0 : positive("BENCH_FLOOR", 300),
    stackFloor: process.env.BENCH_STACK_FLOOR !== "0",
    billed: process.env.BENCH_BILLED !== "0",
    pin: process.env.BENCH_PIN !== "0" && canPin(availableParallelism()),
    out: resolve(root, process.env.BENCH_OUT ?? "bench/results/latest.json"),
    profileDir: process.env.BENCH_PROFILE ? resolve(root, process.env.BENCH_PROFILE) : undefined,
    profileKind: profileKind(process.env.BENCH_PROFILE_KIND),
    /** Extra Node.js options for Zona (experiments: `--trace-gc`, another semi-space size...). */
    zonaArgs: (process.env.BENCH_ZONA_ARGS ?? "").split(" ").filter((arg) => arg !== ""),
    /** Redis of a distributed run: each run through Zona reports Redis's script time per answer. */
    redisUrl: process.env.REDIS_URL || undefined,
    // Zona gets the benchmark's environment: these decide where it keeps its data.
    storage: storageOf(Boolean(process.env.DATABASE_URL), Boolean(process.env.REDIS_URL)),
  };
}

function profileKind(value: string | undefined): ProfileKind {
  return value === "heap" || value === "live" || value === "gc" ? value : "cpu";
}

/**
 * Rounds of streams per level: one stream at a time is where the TTFT targets are read, so more (the
 * fake engine's first token comes from a 20 ms timer that fires up to a millisecond or so late: the
 * difference between two targets' medians of 16 streams each moved by up to 1.5 ms between runs).
 */
function streamRounds(): { oneStream: number; more: number } {
  if (!process.env.BENCH_STREAM_ROUNDS) return { oneStream: 48, more: 3 };
  const rounds = positive("BENCH_STREAM_ROUNDS", 3);
  return { oneStream: rounds, more: rounds };
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
