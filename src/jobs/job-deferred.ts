/**
 * Thrown by a handler whose job is not finished but has nothing to do now (a video still being
 * made, no machine free yet, the process closing mid-step): the queue runs it again after `delayMs`,
 * and it does not count as a failed attempt. Each run is then one short step of a long job, so a
 * job of many minutes never holds a worker while it waits.
 */
export class JobDeferred extends Error {
  override name = "JobDeferred";
  readonly delayMs: number;
  constructor(delayMs: number) {
    super(`job deferred by ${delayMs} ms`);
    this.delayMs = Math.max(0, delayMs);
  }
}
