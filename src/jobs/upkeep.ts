import type { FastifyBaseLogger } from "fastify";
import type { JobQueue } from "./job-queue.ts";
import { Periodic } from "./periodic.ts";

/**
 * The housekeeping of one kind of background job, on every instance (a pass is harmless twice): it
 * queues again the jobs whose queue entry was lost (Redis emptied, the queue away when they were
 * added) and cleans after finished ones. A pass runs at start, then every `everyMs`, and at once
 * when the queue's Redis answers again after an outage.
 */
export abstract class Upkeep {
  protected readonly queue: JobQueue;
  protected readonly log: Pick<FastifyBaseLogger, "warn" | "info"> | undefined;
  private readonly everyMs: number;
  private readonly periodic: Periodic;

  /** `what` names the upkeep in the warning of a pass that fails (the next pass tries again). */
  constructor(what: string, deps: { queue: JobQueue; everyMs: number; log?: FastifyBaseLogger | undefined }) {
    this.queue = deps.queue;
    this.log = deps.log;
    this.everyMs = deps.everyMs;
    this.periodic = new Periodic(what, () => this.pass(), deps.log);
  }

  /** One pass of the housekeeping. */
  protected abstract pass(): Promise<unknown>;

  /** After an outage of the queue's Redis: a pass at once (the jobs added meanwhile failed). */
  protected afterOutage(): void {
    this.periodic.runNow();
  }

  /** Runs a pass now, then every `everyMs` and after every outage of the queue, until stopped. */
  start(everyMs = this.everyMs): void {
    this.periodic.start(everyMs);
    this.queue.onReconnected?.(() => this.afterOutage());
  }

  stop(): void {
    this.periodic.stop();
  }
}
