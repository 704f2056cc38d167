import { createServer } from "node:net";

// Ports below Linux's ephemeral range (32768-60999), a band per Vitest worker: a port found free
// here cannot be taken meanwhile by another worker's listener, nor by an outgoing connection (those
// get ephemeral ports), before the process it is meant for binds it.
const FIRST_PORT = 20_000;
const BAND = 3_000;
const pool = Math.max(1, Number(process.env.VITEST_POOL_ID ?? 1) || 1);
const bandStart = FIRST_PORT + ((pool - 1) % 4) * BAND;
// Walks the band, so a port handed out a moment ago (its process maybe still closing) is not handed out again soon.
let next = Math.floor(Math.random() * BAND);

/** A loopback port that was free a moment ago and that no other test of this run will be given. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < BAND; tries++) {
    const port = bandStart + (next++ % BAND);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${bandStart} and ${bandStart + BAND - 1}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
