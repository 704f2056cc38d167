import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { median } from "./stats.ts";

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/**
 * Resident set size in MB of a process and every process below it (children, their children):
 * VmRSS of /proc/<pid>/status, which covers all threads of a process (Zona's worker threads
 * included), summed over the tree. Zona spawns no child process today; one it ever spawns is
 * counted too. `below` is a list from `descendants` taken earlier (each call makes a new one
 * otherwise). undefined once the process is gone.
 */
export function rssMb(pid: number, below: number[] = descendants(pid)): number | undefined {
  const own = vmRssKb(pid);
  if (own === undefined) return undefined;
  let kb = own;
  for (const child of below) kb += vmRssKb(child) ?? 0;
  return kb / 1024;
}

function vmRssKb(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb);
  } catch {
    return undefined;
  }
}

/**
 * Every process below `pid`. /proc/<pid>/task/<tid>/children is missing on kernels without
 * CONFIG_PROC_CHILDREN (this machine's), so each process's parent is read from its /proc/<n>/stat:
 * about a hundred small reads, some 2 ms of the load generator's core.
 */
export function descendants(pid: number): number[] {
  const childrenOf = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // After the command name (which may hold spaces): state, then the parent's pid.
    const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const siblings = childrenOf.get(parent);
    if (siblings) siblings.push(Number(name));
    else childrenOf.set(parent, [Number(name)]);
  }
  const found: number[] = [];
  const queue = [pid];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const child of childrenOf.get(next) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  if (pid === process.pid) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }
  return statCpuSeconds(`/proc/${pid}/stat`, pid);
}

/**
 * CPU seconds of a process's main thread alone (JavaScript, and the GC work done on it); the rest
 * of its CPU is its other threads' (V8's GC helpers, libuv's pool).
 */
export function mainThreadCpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/task/${pid}/stat`, pid);
}

function statCpuSeconds(path: string, pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(path, "utf8");
  } catch {
    throw new Error(`process ${pid} is gone`);
  }
  // The command name (field 2) may hold spaces; the fields after it are space-separated.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** The processes whose CPU a run reports, by name: one process, or several counted together. */
export type CpuPids = Record<string, number | readonly number[]>;

function cpuSecondsOf(pids: number | readonly number[]): number {
  return typeof pids === "number" ? cpuSeconds(pids) : pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
}

/**
 * Measures, over a stretch of time, the share of one core each process used (100 = one full core);
 * for the process named `zona`, its main thread's share too (`zonaMain`).
 */
export class CpuMeter {
  private readonly pids: CpuPids;
  private readonly start: Record<string, number> = {};
  private readonly startedAt = performance.now();

  constructor(pids: CpuPids) {
    this.pids = pids;
    for (const [name, seconds] of Object.entries(this.used())) this.start[name] = seconds;
  }

  /** Percent of one core per name (the sum of its processes) since the meter was made. */
  read(): Record<string, number> {
    const elapsed = (performance.now() - this.startedAt) / 1000;
    const shares: Record<string, number> = {};
    for (const [name, seconds] of Object.entries(this.used())) {
      shares[name] = Math.round(((seconds - (this.start[name] ?? 0)) / elapsed) * 1000) / 10;
    }
    return shares;
  }

  private used(): Record<string, number> {
    const seconds: Record<string, number> = {};
    for (const [name, pid] of Object.entries(this.pids)) seconds[name] = cpuSecondsOf(pid);
    const zona = this.pids.zona;
    if (typeof zona === "number") seconds.zonaMain = mainThreadCpuSeconds(zona);
    return seconds;
  }
}

/**
 * Samples the RSS of a process and its descendants (see rssMb) every `everyMs` while running;
 * `stop` gives the largest sample. The tree is looked up again once a second, not at every
 * sample: the lookup costs the load generator's core about 2 ms.
 */
export class RssSampler {
  private readonly pid: number;
  private readonly timer: NodeJS.Timeout;
  private max = 0;
  private below: number[] = [];
  private treeReadAt = Number.NEGATIVE_INFINITY;

  constructor(pid: number, everyMs = 200) {
    this.pid = pid;
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  stop(): number {
    clearInterval(this.timer);
    this.treeReadAt = Number.NEGATIVE_INFINITY;
    this.sample();
    return this.max;
  }

  private sample(): void {
    const now = performance.now();
    if (now - this.treeReadAt >= 1000) {
      this.below = descendants(this.pid);
      this.treeReadAt = now;
    }
    const rss = rssMb(this.pid, this.below);
    if (rss !== undefined && rss > this.max) this.max = rss;
  }
}

/**
 * Idle RSS (process tree, MB): a second after the call (what the process just did settles), the
 * median of five samples 200 ms apart.
 */
export async function idleRssMb(pid: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMb(pid) ?? Number.NaN);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return median(samples);
}

/**
 * Waits until a process is idle (under 5 % of a core over 250 ms), at most `maxMs`: a run must not
 * start while the gateway still works off the requests the previous run left in flight.
 */
export async function waitUntilIdle(pid: number, maxMs = 20_000): Promise<number> {
  const started = performance.now();
  for (;;) {
    const before = cpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const share = (cpuSeconds(pid) - before) / 0.25;
    const waited = performance.now() - started;
    if (share < 0.05 || waited >= maxMs) return Math.round(waited);
  }
}
