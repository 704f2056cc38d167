import type { FastifyBaseLogger } from "fastify";

const SETTLE_ATTEMPTS = 3;
// How long a shutdown waits for requests that hold money to settle; past it, the sweep takes over.
const DRAIN_WAIT_MS = 10_000;

/**
 * The requests that hold money and the writes that close it, so that a graceful shutdown waits for
 * both; each write is tried a few times, as a transient database failure must not leave money held.
 */
export class Settlements {
  private readonly log: FastifyBaseLogger | undefined;
  /** Requests whose reservation is not settled or released yet. */
  private readonly open = new Set<string>();
  private readonly pending = new Set<Promise<unknown>>();
  private onAllClosed: (() => void) | undefined;

  constructor(log: FastifyBaseLogger | undefined) {
    this.log = log;
  }

  /** A request now holds money (or will leave a record) until its `close`. */
  opened(requestId: string): void {
    this.open.add(requestId);
  }

  /**
   * Closes a request with its write, tried up to three times (each try is told its attempt: a retry
   * may find written what an attempt that seemed to fail wrote); `undo` runs when every attempt failed
   * (what the write would have recorded did not happen). Resolves whether it was written.
   */
  close(requestId: string, write: Write<unknown>, undo?: () => void): Promise<boolean> {
    const done = this.withRetry(requestId, write)
      .then((written) => {
        if (!written) undo?.();
        return written;
      })
      .finally(() => this.pending.delete(done));
    this.pending.add(done);
    this.open.delete(requestId);
    if (this.open.size === 0) this.onAllClosed?.();
    return done;
  }

  /** Tries a write up to three times; the last failure is thrown (a job's next run closes it then). */
  async retried<T>(write: Write<T>): Promise<T> {
    const running = retry(write);
    const followed = running.then(
      () => undefined,
      () => undefined,
    );
    this.pending.add(followed);
    try {
      return await running;
    } finally {
      this.pending.delete(followed);
    }
  }

  /**
   * Waits until every open request is closed and every write done (graceful shutdown). A response's
   * `close` event comes a tick after its connection closed, so even once the server has closed, a
   * cut stream may still be about to settle: it is waited for, not assumed done.
   */
  async drain(): Promise<void> {
    if (this.open.size > 0) {
      const allClosed = new Promise<void>((resolve) => {
        this.onAllClosed = resolve;
      });
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, DRAIN_WAIT_MS).unref());
      await Promise.race([allClosed, timeout]);
      if (this.open.size > 0) {
        this.log?.warn(
          { open: this.open.size },
          "requests still hold money at shutdown; the sweep will release it",
        );
      }
    }
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  // If every attempt fails, what the request held is given back (by the sweep, or `undo`) and it is
  // not charged. Resolves whether it wrote.
  private async withRetry(requestId: string, write: Write<unknown>): Promise<boolean> {
    try {
      await retry(write);
      return true;
    } catch (error) {
      this.log?.error({ err: error, request_id: requestId }, "could not settle a reservation");
      return false;
    }
  }
}

/** How long a shutdown waits for the usage records still to be written. */
export const FLUSH_WAIT_MS = DRAIN_WAIT_MS;

/** A write, told which attempt it is (1 for the first). */
export type Write<T> = (attempt: number) => Promise<T>;

async function retry<T>(write: Write<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write(attempt);
    } catch (error) {
      if (attempt >= SETTLE_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}
