// What the test process (the app runs in it) holds, read from /proc: the fault experiments'
// evidence that nothing leaked.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** Targets of this process's open file descriptors (`socket:[inode]`, paths, ...). */
export function openDescriptors(): string[] {
  const targets: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      targets.push(readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // closed between the listing and the read (the listing's own descriptor, for one)
    }
  }
  return targets;
}

/** Open files under an upload folder (`zona-uploads-*`), deleted or not. */
export function openUploadFiles(): string[] {
  return openDescriptors().filter((target) => target.includes("zona-uploads-"));
}

/**
 * The server's side of the TCP connections to `port` that this process holds: sockets whose local
 * port is `port`, other than the listening one. The clients' sides (remote port `port`) do not count.
 */
export function serverConnections(port: number): number {
  const own = new Set<string>();
  for (const target of openDescriptors()) {
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) own.add(inode);
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  let count = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const columns = line.trim().split(/\s+/);
      const [local, state, inode] = [columns[1], columns[3], columns[9]];
      if (local?.endsWith(`:${hexPort}`) && state !== "0A" && inode !== undefined && own.has(inode)) count++;
    }
  }
  return count;
}

setFlagsFromString("--expose-gc");
const collect = runInNewContext("gc") as () => void;

/**
 * Bytes of JavaScript heap and buffers in use after a full garbage collection. (`external` is left
 * out: PGlite's WebAssembly memory moves it by hundreds of MB either way.)
 */
export function memoryInUse(): number {
  collect();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/** The resident set size, in bytes (what the operating system counts). */
export function residentBytes(): number {
  return process.memoryUsage().rss;
}

/** Waits until `check` holds, polling; throws with `what` after `timeoutMs`. */
export async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits `ms` milliseconds. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Megabytes with one decimal, for the figures a test prints. */
export function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}
