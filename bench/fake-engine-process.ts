// The fake vLLM-style engine of the benchmark, in a process of its own so that its CPU time is
// measured apart from Zona's and the load generator's. Prints `{"url": ...}` once it listens and
// exits on SIGTERM, SIGINT or when its stdin closes (the benchmark went away).
import { FakeOpenAiServer } from "../test/fakes/index.ts";
import { listenUntilStopped } from "./listen-until-stopped.ts";

const fake = new FakeOpenAiServer({ chunks: 64, chunkDelayMs: 20 });
const { url, close } = await fake.start();

// The fake logs every request it receives; at thousands per second that log would grow for the
// whole run and slow the fake down as it goes, so it is emptied.
const forget = setInterval(() => fake.clearRequests(), 500);

listenUntilStopped(url, async () => {
  clearInterval(forget);
  await close();
});
