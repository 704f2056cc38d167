import type { FastifyBaseLogger } from "fastify";

/** A task run now and then every so often, until stopped. */
export class Periodic {
  private readonly what: string;
  private readonly task: () => Promise<unknown>;
  private readonly log: Pick<FastifyBaseLogger, "warn"> | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** `what` names the task in the warning of a run that fails (the next run tries again). */
  constructor(what: string, task: () => Promise<unknown>, log?: Pick<FastifyBaseLogger, "warn">) {
    this.what = what;
    this.task = task;
    this.log = log;
  }

  /** Runs the task now and then every `everyMs`; a second start changes nothing. */
  start(everyMs: number): void {
    if (this.timer) return;
    this.run();
    // Housekeeping never keeps the process alive on its own.
    this.timer = setInterval(() => this.run(), everyMs);
    this.timer.unref();
  }

  /** Runs the task once more now, between two periods (when what it repairs may just have broken); not once stopped. */
  runNow(): void {
    if (this.timer) this.run();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private run(): void {
    this.task().catch((error: unknown) =>
      this.log?.warn({ err: error }, `${this.what} failed; trying again at the next run`),
    );
  }
}
