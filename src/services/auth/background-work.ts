import type { FastifyBaseLogger } from "fastify";

/**
 * Work a request starts and does not wait for (sending mail), so that its answer neither waits
 * for a mail server nor shows by its timing whether an account exists. Failures are logged by
 * message only: nothing a user sent, no token, reaches the log. `drain` waits for what runs.
 */
export class BackgroundWork {
  private readonly running = new Set<Promise<void>>();
  private readonly log: FastifyBaseLogger | undefined;
  constructor(log?: FastifyBaseLogger) {
    this.log = log;
  }

  run(what: string, work: () => Promise<void>): void {
    const done: Promise<void> = work()
      .catch((error: unknown) => {
        this.log?.error({ reason: error instanceof Error ? error.message : String(error) }, `${what} failed`);
      })
      .finally(() => this.running.delete(done));
    this.running.add(done);
  }

  /** Resolves once nothing runs, including work started while waiting. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
