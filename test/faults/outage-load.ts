import { askChat, type ChatAnswer } from "./chat-request.ts";
import type { CompletedAnswer } from "./crash-load.ts";
import type { CrashKey } from "./crash-setup.ts";

/** One answer of a load through an outage: when it was sent (ms since the load began), how long it took, how it ended. */
export interface OutageSample {
  sentAt: number;
  ms: number;
  answer: ChatAnswer;
}

/**
 * Sends chat completions (half streamed) from `concurrency` clients for `seconds`, while `fault`
 * runs alongside (it gets the load's clock); clients wait `pauseMs` between requests so that a
 * fast failure does not become a flood. Returns every sample and the answers received whole.
 */
export async function loadThroughOutage(options: {
  url: string;
  keys: CrashKey[];
  seconds: number;
  concurrency: number;
  pauseMs: number;
  fault: (elapsed: () => number) => Promise<void>;
}): Promise<{ samples: OutageSample[]; completed: CompletedAnswer[] }> {
  const began = performance.now();
  const elapsed = () => performance.now() - began;
  const samples: OutageSample[] = [];
  const completed: CompletedAnswer[] = [];
  let n = 0;
  const client = async () => {
    while (elapsed() < options.seconds * 1000) {
      const key = options.keys[n % options.keys.length] as CrashKey;
      const stream = n++ % 2 === 1;
      const sentAt = elapsed();
      const answer = await askChat(options.url, key, stream);
      samples.push({ sentAt, ms: elapsed() - sentAt, answer });
      if (answer.kind === "whole") completed.push({ requestId: answer.requestId, keyId: key.keyId, stream });
      await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
  };
  await Promise.all([options.fault(elapsed), ...Array.from({ length: options.concurrency }, client)]);
  return { samples, completed };
}

/** Counts of how the samples ended: `whole`, `status 503 service_unavailable`, `stream-error ...`, `broken`. */
export function tally(samples: OutageSample[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { answer } of samples) {
    const name =
      answer.kind === "status"
        ? `status ${answer.status} ${answer.code ?? ""}`.trim()
        : answer.kind === "stream-error"
          ? `stream-error ${answer.code ?? ""}`.trim()
          : answer.kind;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}
