import { Agent, request } from "undici";
import type { LoadTarget } from "./load.ts";
import { Samples } from "./stats.ts";
import { BENCH_MODEL } from "./zona.ts";

/** Streams of one target (the engine, the stack floor or Zona) at one number of concurrent streams. */
export interface StreamResult {
  target: LoadTarget;
  concurrentStreams: number;
  /** Streams read to their end. */
  streams: number;
  failures: number;
  /** Median number of content chunks per stream (the fake sends 64). */
  chunksPerStream: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
  gapP50Ms: number;
  gapP99Ms: number;
  gapMaxMs: number;
}

const STREAM_BODY = JSON.stringify({
  model: BENCH_MODEL,
  messages: [{ role: "user", content: "Tell the benchmark a long story, one word at a time." }],
  stream: true,
});

const agent = new Agent({ keepAliveTimeout: 30_000 });

/**
 * The streams of one target at one level, gathered over rounds that interleave with other targets'
 * (a machine whose speed drifts then tilts no target). For each stream: the time to the first
 * `data:` event with content (from just before the request is sent) and every gap between two
 * consecutive content events, as the client reads them off the socket.
 */
export class StreamSamples {
  readonly target: LoadTarget;
  readonly concurrentStreams: number;
  private readonly ttft = new Samples();
  private readonly gaps = new Samples();
  private readonly chunkCounts: number[] = [];
  private failures = 0;

  constructor(target: LoadTarget, concurrentStreams: number) {
    this.target = target;
    this.concurrentStreams = concurrentStreams;
  }

  /** One round: `concurrentStreams` streams started together with `key`, each read to its end. */
  async round(url: string, key: string): Promise<void> {
    const outcomes = await Promise.all(
      Array.from({ length: this.concurrentStreams }, () => readStream(url, key)),
    );
    for (const outcome of outcomes) {
      if (outcome === undefined || outcome.first === undefined) {
        this.failures += 1;
        continue;
      }
      this.ttft.add(outcome.first);
      for (const gap of outcome.gaps) this.gaps.add(gap);
      this.chunkCounts.push(outcome.gaps.length + 1);
    }
  }

  result(): StreamResult {
    const [ttftP50, ttftP99] = this.ttft.percentiles(50, 99);
    const [gapP50, gapP99, gapMax] = this.gaps.percentiles(50, 99, 100);
    const counts = [...this.chunkCounts].sort((a, b) => a - b);
    return {
      target: this.target,
      concurrentStreams: this.concurrentStreams,
      streams: this.ttft.size,
      failures: this.failures,
      chunksPerStream: counts[Math.floor(counts.length / 2)] ?? 0,
      ttftP50Ms: ttftP50 ?? Number.NaN,
      ttftP99Ms: ttftP99 ?? Number.NaN,
      gapP50Ms: gapP50 ?? Number.NaN,
      gapP99Ms: gapP99 ?? Number.NaN,
      gapMaxMs: gapMax ?? Number.NaN,
    };
  }
}

async function readStream(
  url: string,
  key: string,
): Promise<{ first: number | undefined; gaps: number[] } | undefined> {
  const started = performance.now();
  const { statusCode, body } = await request(`${url}/v1/chat/completions`, {
    method: "POST",
    dispatcher: agent,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: STREAM_BODY,
  });
  if (statusCode !== 200) {
    process.stderr.write(`bench: stream answered ${statusCode}: ${(await body.text()).slice(0, 300)}\n`);
    return undefined;
  }
  let buffered = "";
  let first: number | undefined;
  let last = 0;
  const gaps: number[] = [];
  for await (const piece of body) {
    const at = performance.now();
    buffered += (piece as Buffer).toString("utf8");
    let end = buffered.indexOf("\n\n");
    while (end !== -1) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      end = buffered.indexOf("\n\n");
      if (!hasContent(event)) continue;
      if (first === undefined) first = at - started;
      else gaps.push(at - last);
      last = at;
    }
  }
  return { first, gaps };
}

function hasContent(event: string): boolean {
  for (const line of event.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const data = line.slice(5).trim();
    if (data === "[DONE]") return false;
    const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: unknown } }> };
    const content = chunk.choices?.[0]?.delta?.content;
    if (typeof content === "string" && content.length > 0) return true;
  }
  return false;
}

/** Closes the streaming client's connections. */
export function closeStreamClient(): Promise<void> {
  return agent.close();
}
