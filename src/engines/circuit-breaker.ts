/** Health of one machine as requests and probes see it. */
export type CircuitState = "closed" | "open" | "half-open";

/** The operator's timings of a breaker (config `engines.circuit_cooldown_seconds` and `circuit_max_cooldown_seconds`). */
export interface BreakerSettings {
  /** The first cool-down after the circuit opens. */
  cooldownMs: number;
  /** The longest cool-down, however long the machine keeps failing. */
  maxCooldownMs: number;
}

/** The defaults of the configuration: 5 s doubling up to 60 s. */
export const DEFAULT_BREAKER_SETTINGS: BreakerSettings = { cooldownMs: 5_000, maxCooldownMs: 60_000 };

// Answers with errors are counted; a refused connection opens the circuit at once (the machine is down).
const ERRORS_TO_OPEN = 3;

/**
 * A passive circuit breaker: failures open it for a cooldown that doubles while the machine keeps
 * failing; after the cooldown one request (or the active probe) may try, and a success closes it.
 */
export class CircuitBreaker {
  private failures = 0;
  private openedUntil = 0;
  private settings: BreakerSettings;
  private cooldownMs: number;
  private trial = false;

  constructor(settings: BreakerSettings = DEFAULT_BREAKER_SETTINGS) {
    this.settings = settings;
    this.cooldownMs = settings.cooldownMs;
  }

  /** Takes new timings (a configuration reload); an open circuit keeps its current end. */
  configure(settings: BreakerSettings): void {
    this.settings = settings;
    this.cooldownMs =
      this.openedUntil === 0
        ? settings.cooldownMs
        : Math.min(Math.max(this.cooldownMs, settings.cooldownMs), settings.maxCooldownMs);
  }

  state(now: number): CircuitState {
    if (this.openedUntil === 0) return "closed";
    return now >= this.openedUntil ? "half-open" : "open";
  }

  /** When the circuit lets a trial through again (epoch ms); undefined while it is closed. */
  openUntil(): number | undefined {
    return this.openedUntil === 0 ? undefined : this.openedUntil;
  }

  /** Whether a request may go to the machine now; in half-open only one goes until it answers. */
  tryAcquire(now: number): boolean {
    const state = this.state(now);
    if (state === "closed") return true;
    if (state === "open" || this.trial) return false;
    this.trial = true;
    return true;
  }

  /** The machine answered (a request or the probe): the circuit closes, whatever its cool-down. */
  success(): void {
    this.failures = 0;
    this.openedUntil = 0;
    this.cooldownMs = this.settings.cooldownMs;
    this.trial = false;
  }

  /** The attempt ended without a verdict on the machine (the client left): a trial may go again. */
  release(): void {
    this.trial = false;
  }

  /** A failure; `down` (connection refused, or a probe failing) opens the circuit at once. */
  failure(now: number, down: boolean): void {
    this.failures += 1;
    const wasOpen = this.openedUntil !== 0;
    this.trial = false;
    if (down || wasOpen || this.failures >= ERRORS_TO_OPEN) {
      if (wasOpen) this.cooldownMs = Math.min(this.cooldownMs * 2, this.settings.maxCooldownMs);
      this.openedUntil = now + this.cooldownMs;
    }
  }
}

/** The breaker timings of a configuration's `engines` section. */
export function breakerSettings(engines: {
  circuit_cooldown_seconds: number;
  circuit_max_cooldown_seconds: number;
}): BreakerSettings {
  return {
    cooldownMs: engines.circuit_cooldown_seconds * 1000,
    maxCooldownMs: engines.circuit_max_cooldown_seconds * 1000,
  };
}
