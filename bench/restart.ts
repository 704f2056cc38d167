import { Agent, request } from "undici";
import { CHAT_BODY } from "./load.ts";
import { idleRssMb } from "./proc.ts";
import { round3 } from "./stats.ts";
import { type StartedZona, spawnZona } from "./zona.ts";

/** Zona stopped and started again on its data (the target of the start-up on an existing data folder). */
export interface RestartResult {
  /** From SIGTERM to the old process's exit. */
  stopMs: number;
  /** The old process's exit code: 0 is a graceful stop; null means it had to be killed. */
  stopExitCode: number | null;
  /** From spawning the new process to the first 200 answer of `POST /v1/chat/completions` (read whole). */
  firstAnswerMs: number;
  /** Requests sent until then, one every POLL_MS from the spawn (a refused connection counts). */
  attempts: number;
  /** Answers other than 200 before the first 200, by status. */
  earlierStatuses: Record<string, number>;
  /** RSS of the new process (and its descendants) a second after its first answer, as the first idle. */
  idleMb: number;
}

const POLL_MS = 10;
const FIRST_ANSWER_WITHIN_MS = 60_000;

/**
 * Stops Zona gracefully (SIGTERM, waits for the exit), starts it again with the same command
 * line, environment and core (so the same config, data dir or DATABASE_URL, and port), and times
 * the first answer to the request users send, with a key issued before the restart: the key is
 * then read from the database again, its cache having gone with the old process. No /healthz:
 * what counts is the first real answer.
 */
export async function restartZona(
  zona: StartedZona,
  key: string,
): Promise<{ zona: StartedZona; result: RestartResult }> {
  const stopAt = performance.now();
  await zona.child.stop(30_000);
  const stopMs = performance.now() - stopAt;
  const stopExitCode = await zona.child.exited;

  // A fresh agent: no socket of the old process can be reused by mistake.
  const agent = new Agent({ connections: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const spawnedAt = performance.now();
  const child = spawnZona(zona.launch);
  let exitCode: number | null | undefined;
  void child.exited.then((code) => {
    exitCode = code;
  });
  const earlierStatuses: Record<string, number> = {};
  let attempts = 0;
  let firstAnswerMs: number | undefined;
  try {
    while (firstAnswerMs === undefined) {
      const attemptAt = performance.now();
      attempts += 1;
      try {
        const { statusCode, body } = await request(`${zona.url}/v1/chat/completions`, {
          method: "POST",
          dispatcher: agent,
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
          body: CHAT_BODY,
        });
        await body.arrayBuffer();
        if (statusCode === 200) firstAnswerMs = performance.now() - spawnedAt;
        else earlierStatuses[statusCode] = (earlierStatuses[statusCode] ?? 0) + 1;
      } catch {
        // Not listening yet.
      }
      if (firstAnswerMs !== undefined) break;
      if (exitCode !== undefined) {
        throw new Error(`zona exited (${exitCode}) while restarting:\n${child.output()}`);
      }
      if (performance.now() - spawnedAt > FIRST_ANSWER_WITHIN_MS) {
        throw new Error(
          `zona gave no 200 answer within ${FIRST_ANSWER_WITHIN_MS / 1000} s of its restart ` +
            `(answers: ${JSON.stringify(earlierStatuses)}):\n${child.output()}`,
        );
      }
      await sleep(POLL_MS - (performance.now() - attemptAt));
    }
  } finally {
    await agent.close();
  }

  const idleMb = await idleRssMb(child.pid);
  return {
    zona: { ...zona, child },
    result: {
      stopMs: round3(stopMs),
      stopExitCode,
      firstAnswerMs: round3(firstAnswerMs),
      attempts,
      earlierStatuses,
      idleMb: round3(idleMb),
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
