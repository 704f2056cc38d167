import type { ZonaChild } from "../helpers/zona-child.ts";
import { askChat } from "./chat-request.ts";
import type { CrashKey } from "./crash-setup.ts";

/** An answer the client received whole: a 200 body that parsed, or a stream that reached `[DONE]`. */
export interface CompletedAnswer {
  requestId: string;
  keyId: string;
  stream: boolean;
}

/** What the load saw. */
export interface LoadOutcome {
  /** Requests sent (every attempt, also those refused while Zona was down). */
  sent: number;
  completed: CompletedAnswer[];
  /** Answered 402 (a spending limit or the credits reached). */
  refused: number;
  /** Connections refused, reset or cut mid-answer by a kill. */
  broken: number;
  /** Any other status. */
  otherStatuses: Record<string, number>;
  kills: number;
  /** How long each restart took until `/healthz` answered, in ms. */
  restartMs: number[];
  durationMs: number;
}

/** A small deterministic generator (mulberry32): the same seed gives the same kill points. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Sends `requests` chat completions (half of them streamed) from `concurrency` clients spread over
 * the keys, and kills Zona with SIGKILL `kills` times at random points of the load, starting it again
 * at once each time. Clients whose request breaks try the next one after a short pause.
 */
export async function loadWithKills(options: {
  zona: ZonaChild;
  keys: CrashKey[];
  requests: number;
  concurrency: number;
  kills: number;
  seed: number;
}): Promise<LoadOutcome> {
  const { zona, keys, requests } = options;
  const random = seededRandom(options.seed);
  const killAt = Array.from({ length: options.kills }, () =>
    Math.floor((0.05 + 0.9 * random()) * requests),
  ).sort((a, b) => a - b);
  const outcome: LoadOutcome = {
    sent: 0,
    completed: [],
    refused: 0,
    broken: 0,
    otherStatuses: {},
    kills: 0,
    restartMs: [],
    durationMs: 0,
  };
  const started = performance.now();
  let down: Promise<void> | undefined;

  const killer = async () => {
    for (const point of killAt) {
      while (outcome.sent < point) await pause(2);
      // A few milliseconds later, so the kill lands among answers in every stage.
      await pause(Math.floor(random() * 15));
      const restarted = (async () => {
        await zona.kill9();
        outcome.kills += 1;
        const restart = performance.now();
        await zona.start();
        outcome.restartMs.push(performance.now() - restart);
      })();
      down = restarted;
      await restarted;
      down = undefined;
    }
  };

  const client = async (index: number) => {
    for (;;) {
      const n = outcome.sent;
      if (n >= requests) return;
      outcome.sent += 1;
      const key = keys[(n + index) % keys.length] as CrashKey;
      const stream = n % 2 === 1;
      const answer = await askChat(zona.url, key, stream);
      if (answer.kind === "whole")
        outcome.completed.push({ requestId: answer.requestId, keyId: key.keyId, stream });
      else if (answer.kind === "status" && answer.status === 402) outcome.refused += 1;
      else if (answer.kind === "status") {
        outcome.otherStatuses[answer.status] = (outcome.otherStatuses[answer.status] ?? 0) + 1;
      } else {
        outcome.broken += 1;
        if (down) await down;
        else await pause(20);
      }
    }
  };

  await Promise.all([killer(), ...Array.from({ length: options.concurrency }, (_, i) => client(i))]);
  outcome.durationMs = performance.now() - started;
  return outcome;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
