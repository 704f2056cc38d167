import { serviceUnavailable } from "../errors/catalogue.ts";
import type { SettleFacts } from "../store/repositories/billing.ts";

/** What a finished request measured. */
export interface Measured {
  costMicros: number;
  units: Record<string, number>;
  /** `ok`, or `partial` for a stream the client cut. */
  outcome?: "ok" | "partial";
  zone?: string | null;
  machine?: string | null;
}

/** Why a request was not billed. */
export interface NotBilled {
  outcome: "failed" | "refused";
  units?: Record<string, number>;
  zone?: string | null;
  machine?: string | null;
}

/** Closes reservations; the billing service's side of a Reservation. */
export interface ReservationCloser {
  /** Resolves whether the record was written (never rejects: a failure is retried, then told). */
  close(requestId: string, facts: SettleFacts): Promise<boolean>;
}

/**
 * The money held for one request. Exactly one of settle or release takes effect, once; calling
 * either again (a client disconnect racing the end of a stream) changes nothing.
 */
export class Reservation {
  readonly requestId: string;
  readonly amountMicros: number;
  private readonly closer: ReservationCloser;
  private readonly startedAt: number;
  private closing: Promise<boolean> | undefined;

  constructor(requestId: string, amountMicros: number, closer: ReservationCloser) {
    this.requestId = requestId;
    this.amountMicros = amountMicros;
    this.closer = closer;
    this.startedAt = Date.now();
  }

  /** Whether settle or release was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /**
   * Charges the real cost (never more than was reserved) and writes the usage record. Rejects with
   * the 503 `service_unavailable` when the record cannot be written: an answer is delivered only
   * with its record (what it held is given back by the sweep).
   */
  settle(measured: Measured): Promise<void> {
    this.closing ??= this.closer.close(this.requestId, {
      costMicros: measured.costMicros,
      units: measured.units,
      outcome: measured.outcome ?? "ok",
      zone: measured.zone ?? null,
      machine: measured.machine ?? null,
      durationMs: Date.now() - this.startedAt,
    });
    return this.closing.then((written) => {
      if (!written) throw serviceUnavailable();
    });
  }

  /** Gives everything back (failure, refusal, 502) and records the request at no cost; never rejects. */
  release(reason: NotBilled): Promise<void> {
    this.closing ??= this.closer.close(this.requestId, {
      costMicros: 0,
      units: reason.units ?? {},
      outcome: reason.outcome,
      zone: reason.zone ?? null,
      machine: reason.machine ?? null,
      durationMs: Date.now() - this.startedAt,
    });
    return this.closing.then(() => undefined);
  }
}
