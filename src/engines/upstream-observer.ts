import type { UpstreamFailure } from "./types.ts";

/** One attempt of the router on one machine, as it ended. */
export interface UpstreamAttempt {
  requestId: string | undefined;
  machine: string;
  zone: string;
  protocol: string;
  model: string;
  /** Milliseconds until the machine answered (for streams: until the stream began) or failed. */
  ms: number;
  /** Absent when the attempt succeeded. */
  failure?: {
    kind: UpstreamFailure;
    /** The upstream HTTP status, for `status` failures. */
    status?: number;
    /** The start of the error's message (at most 200 characters), as the machines view shows it; not for logs. */
    message: string;
  };
}

/** Who hears of every upstream attempt (metrics, the machines view). */
export interface UpstreamObserver {
  attempt(attempt: UpstreamAttempt): void;
}
