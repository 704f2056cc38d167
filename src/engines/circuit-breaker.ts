/** Health of one machine as requests and probes see it. */
export type CircuitState = "closed" | "open" | "half-open";

const FIRST_COOLDOWN_MS = 5_000;
const MAX_COOLDOWN_MS = 60_000;
// Answers with errors are counted; a refused connection opens the circuit at once (the machine is down).
const ERRORS_TO_OPEN = 3;

/**
 * A passive circuit breaker: failures open it for a cooldown that doubles while the machine keeps
 * failing; after the cooldown one request (or the active probe) may try, and a success closes it.
 */
export class CircuitBreaker {
  private failures = 0;
  private openedUntil = 0;
  private cooldownMs = FIRST_COOLDOWN_MS;
  private trial = false;

  state(now: number): CircuitState {
    if (this.openedUntil === 0) return "closed";
    return now >= this.openedUntil ? "half-open" : "open";
  }

  /** Whether a request may go to the machine now; in half-open only one goes until it answers. */
  tryAcquire(now: number): boolean {
    const state = this.state(now);
    if (state === "closed") return true;
    if (state === "open" || this.trial) return false;
    this.trial = true;
    return true;
  }

  success(): void {
    this.failures = 0;
    this.openedUntil = 0;
    this.cooldownMs = FIRST_COOLDOWN_MS;
    this.trial = false;
  }

  /** A failure; `down` (connection refused, or a probe failing) opens the circuit at once. */
  failure(now: number, down: boolean): void {
    this.failures += 1;
    const wasOpen = this.openedUntil !== 0;
    this.trial = false;
    if (down || wasOpen || this.failures >= ERRORS_TO_OPEN) {
      if (wasOpen) this.cooldownMs = Math.min(this.cooldownMs * 2, MAX_COOLDOWN_MS);
      this.openedUntil = now + this.cooldownMs;
    }
  }
}
