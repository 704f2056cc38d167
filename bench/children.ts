import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TASKSET = "/usr/bin/taskset";

/** A child process of the benchmark; `stop` ends it and waits for its exit. */
export interface Child {
  name: string;
  pid: number;
  process: ChildProcess;
  /** The last lines it wrote (stdout and stderr), for error messages. */
  output(): string;
  exited: Promise<number | null>;
  /** Set once `stop` was called: an exit after that is expected. */
  stopRequested: boolean;
  stop(graceMs?: number): Promise<void>;
}

const children = new Set<Child>();
const tempDirs = new Set<string>();
let handlersInstalled = false;

/** Whether CPU pinning is possible here: taskset exists and there are at least two cores. */
export function canPin(cpus: number): boolean {
  return existsSync(TASKSET) && cpus >= 2;
}

/** Pins this process (every thread, `-a`) to one core, so that the load generator shares it with nothing else of ours. */
export function pinSelf(cpu: number): void {
  execFileSync(TASKSET, ["-a", "-p", "-c", String(cpu), String(process.pid)], { stdio: "ignore" });
}

/** A temporary directory that is removed on exit, also after an error or a signal. */
export function tempDir(prefix: string): string {
  installHandlers();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/**
 * Starts `node <args>` (the same Node as this process), pinned to `cpu` through taskset when
 * given. taskset execs node, so the pid is node's own and /proc/<pid> describes it.
 */
export function startNode(
  name: string,
  args: string[],
  options: { cpu: number | undefined; env: NodeJS.ProcessEnv; cwd: string },
): Child {
  installHandlers();
  const command = options.cpu === undefined ? process.execPath : TASKSET;
  const argv = options.cpu === undefined ? args : ["-c", String(options.cpu), process.execPath, ...args];
  // stdin stays a pipe: a child of ours that sees it close knows the benchmark is gone.
  const child = spawn(command, argv, { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"] });
  if (child.pid === undefined) throw new Error(`${name}: could not be started`);
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    tail.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    if (tail.length > 40) tail.splice(0, tail.length - 40);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  // BENCH_CHILD_LOG: a folder that keeps every child's whole output, for a run that went wrong.
  const logDir = process.env.BENCH_CHILD_LOG;
  if (logDir) {
    mkdirSync(logDir, { recursive: true });
    const file = join(logDir, `${name}-${child.pid}.log`);
    const append = (chunk: Buffer) => appendFileSync(file, chunk);
    child.stdout?.on("data", append);
    child.stderr?.on("data", append);
  }
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
  const handle: Child = {
    name,
    pid: child.pid,
    process: child,
    output: () => tail.join("\n"),
    exited,
    stopRequested: false,
    async stop(graceMs = 15_000) {
      handle.stopRequested = true;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      children.delete(handle);
    },
  };
  children.add(handle);
  void exited.then(() => children.delete(handle));
  return handle;
}

/** A child process that serves HTTP, and its url. */
export interface Listening {
  child: Child;
  url: string;
}

/**
 * Starts a node process that prints `{"url": ...}` on stdout once it listens (the fake engine, the
 * stack floor) and waits for that url; fails if it exits first or says nothing within 30 s.
 */
export async function startListener(
  name: string,
  args: string[],
  options: { cpu: number | undefined; cwd: string },
): Promise<Listening> {
  const child = startNode(name, args, { cpu: options.cpu, cwd: options.cwd, env: process.env });
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = "";
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${child.output()}`)), 30_000);
    child.process.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const line = buffered.split("\n").find((text) => text.startsWith("{"));
      if (!line) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
    void child.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}):\n${child.output()}`));
    });
  });
  return { child, url };
}

/** Ends every child still running and removes every temporary directory (graceful path). */
export async function cleanUp(): Promise<void> {
  await Promise.all([...children].map((child) => child.stop()));
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

// The synchronous last resort: signals and `exit` give no time to wait for a graceful stop.
function killEverything(): void {
  for (const child of children) {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
  }
  children.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.once("exit", killEverything);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping the children and removing temporary files\n`);
      killEverything();
      process.exit(130);
    });
  }
}
