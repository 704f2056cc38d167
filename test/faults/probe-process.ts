// Asks a URL every 250 ms until it gets SIGTERM, then prints each answer's time (ms) as JSON: a
// probe in a process of its own, so that the load sent from the experiment's process does not
// slow the probe's own clock. Usage: node probe-process.ts URL [AUTHORIZATION]
const [url, authorization] = process.argv.slice(2);
const waits: number[] = [];
let running = true;
process.once("SIGTERM", () => {
  running = false;
});
// The first call of a process loads and compiles the HTTP client: not the server's time.
await fetch(url as string, { headers: authorization ? { authorization } : {} })
  .then((answer) => answer.arrayBuffer())
  .catch(() => {});
while (running) {
  const started = performance.now();
  try {
    const answer = await fetch(url as string, {
      headers: authorization ? { authorization } : {},
      signal: AbortSignal.timeout(600_000),
    });
    await answer.arrayBuffer();
  } catch {
    // counted as the time it took to fail
  }
  waits.push(performance.now() - started);
  await new Promise((resolve) => setTimeout(resolve, 250));
}
process.stdout.write(JSON.stringify(waits));
