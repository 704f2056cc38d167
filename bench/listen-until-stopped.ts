/**
 * The life of a child process of the benchmark that serves on loopback: it prints `{"url": ...}`
 * (what bench/children.ts's startListener waits for) and, on SIGTERM, SIGINT or when its stdin
 * closes (the benchmark went away), runs `stop` once and exits.
 */
export function listenUntilStopped(url: string, stop: () => Promise<void>): void {
  let stopping = false;
  const end = async () => {
    if (stopping) return;
    stopping = true;
    await stop();
    process.exit(0);
  };
  process.once("SIGTERM", () => void end());
  process.once("SIGINT", () => void end());
  process.stdin.on("close", () => void end());
  process.stdin.resume();
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}
