import { spawn } from "node:child_process";
import { once } from "node:events";

const PROBE = new URL("./probe-process.ts", import.meta.url).pathname;

/**
 * Asks a URL every 250 ms from a process of its own (probe-process.ts) until stopped, and gives
 * how long each answer took: the load an experiment sends, and the fake engines it runs, then do
 * not slow the probe's own clock.
 */
export function probeProcess(url: string, authorization?: string): { stop(): Promise<number[]> } {
  const child = spawn(process.execPath, [PROBE, url, ...(authorization ? [authorization] : [])], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = once(child, "exit");
  let stopped: Promise<number[]> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        child.kill("SIGTERM");
        await exited;
        return JSON.parse(out || "[]") as number[];
      })();
      return stopped;
    },
  };
}
