import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** Resident set size of a process in MB (VmRSS of /proc/<pid>/status); undefined once it is gone. */
export function rssMb(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  if (pid === process.pid) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    throw new Error(`process ${pid} is gone`);
  }
  // The command name (field 2) may hold spaces; the fields after it are space-separated.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Measures, over a stretch of time, the share of one core each process used (100 = one full core). */
export class CpuMeter {
  private readonly pids: Record<string, number>;
  private readonly start: Record<string, number> = {};
  private readonly startedAt = performance.now();

  constructor(pids: Record<string, number>) {
    this.pids = pids;
    for (const [name, pid] of Object.entries(pids)) this.start[name] = cpuSeconds(pid);
  }

  /** Percent of one core per process since the meter was made. */
  read(): Record<string, number> {
    const elapsed = (performance.now() - this.startedAt) / 1000;
    const shares: Record<string, number> = {};
    for (const [name, pid] of Object.entries(this.pids)) {
      const used = cpuSeconds(pid) - (this.start[name] ?? 0);
      shares[name] = Math.round((used / elapsed) * 1000) / 10;
    }
    return shares;
  }
}

/** Samples the RSS of a process every `everyMs` while running; `stop` gives the largest sample. */
export class RssSampler {
  private readonly pid: number;
  private readonly timer: NodeJS.Timeout;
  private max = 0;

  constructor(pid: number, everyMs = 200) {
    this.pid = pid;
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  stop(): number {
    clearInterval(this.timer);
    this.sample();
    return this.max;
  }

  private sample(): void {
    const rss = rssMb(this.pid);
    if (rss !== undefined && rss > this.max) this.max = rss;
  }
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
