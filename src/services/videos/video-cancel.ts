import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { EngineRegistry } from "../../engines/registry.ts";
import type { Router } from "../../engines/router.ts";
import { UpstreamError } from "../../engines/types.ts";

/** How long a cancel may wait for the machine (also for its open circuit to let a request through). */
const CANCEL_TIMEOUT_MS = 60_000;

/** The shortest wait before asking a machine whose circuit is open again. */
const CIRCUIT_RETRY_MS = 100;

/** The machine's circuit is open: no request goes to it before its cool-down ends. */
class CircuitOpen extends UpstreamError {
  constructor() {
    super("connect", "the machine is not reachable now");
  }
}

/**
 * Cancels (deletes) a job on the machine that runs it: a deleted, timed-out or finished video
 * leaves nothing running or kept on the engine. A machine left out by its open circuit (it failed
 * the reads of the job's state) is asked once its cool-down lets a request through, within
 * CANCEL_TIMEOUT_MS. Never throws: a machine that cannot be reached is logged; its job ends on
 * its own.
 */
export class VideoCancel {
  private readonly registry: EngineRegistry;
  private readonly router: Router;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(deps: { registry: EngineRegistry; router: Router; log?: FastifyBaseLogger }) {
    this.registry = deps.registry;
    this.router = deps.router;
    this.log = deps.log;
  }

  /** `stop` (a closing process) ends the wait for an open circuit. */
  async onEngine(
    machineName: string,
    engineJobId: string,
    videoId: string,
    stop?: AbortSignal,
  ): Promise<void> {
    const machine = this.registry.machines.find((candidate) => candidate.config.name === machineName);
    if (!machine) return;
    const deadline = Date.now() + CANCEL_TIMEOUT_MS;
    try {
      for (;;) {
        try {
          await this.router.runAmong(
            [machine],
            "videos",
            async (target, engine) => {
              await engine.deleteVideo(target.config, engineJobId, AbortSignal.timeout(CANCEL_TIMEOUT_MS));
            },
            () => new CircuitOpen(),
            { model: "video" },
          );
          return;
        } catch (error) {
          const trialAt = Math.max(machine.breaker.openUntil() ?? 0, Date.now()) + CIRCUIT_RETRY_MS;
          if (!(error instanceof CircuitOpen) || trialAt > deadline) throw error;
          await sleep(trialAt - Date.now(), undefined, { ref: false, ...(stop ? { signal: stop } : {}) });
        }
      }
    } catch (error) {
      this.log?.warn(
        {
          video_id: videoId,
          machine: machineName,
          reason: error instanceof Error ? error.message : String(error),
        },
        "could not cancel a video job on its machine",
      );
    }
  }
}
