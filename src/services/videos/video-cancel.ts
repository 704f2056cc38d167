import type { FastifyBaseLogger } from "fastify";
import type { EngineRegistry } from "../../engines/registry.ts";
import type { Router } from "../../engines/router.ts";
import { UpstreamError } from "../../engines/types.ts";

/** How long a cancel may wait for the machine. */
const CANCEL_TIMEOUT_MS = 60_000;

/**
 * Cancels (deletes) a job on the machine that runs it: a deleted, timed-out or finished video
 * leaves nothing running or kept on the engine. Never throws: a machine that cannot be reached
 * is logged; its job ends on its own.
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

  async onEngine(machineName: string, engineJobId: string, videoId: string): Promise<void> {
    const machine = this.registry.machines.find((candidate) => candidate.config.name === machineName);
    if (!machine) return;
    try {
      await this.router.runAmong(
        [machine],
        async (target, adapter) => {
          if (!adapter.deleteVideo)
            throw new UpstreamError("protocol", "this machine's protocol cannot delete videos");
          await adapter.deleteVideo(target.config, engineJobId, AbortSignal.timeout(CANCEL_TIMEOUT_MS));
        },
        () => new UpstreamError("connect", "the machine is not reachable now"),
        { model: "video" },
      );
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
