import type { Payer } from "./payer.ts";

/** What an endpoint says about a request before it runs. */
export interface Charge {
  requestId: string;
  principal: Payer;
  /** The endpoint as recorded in usage, e.g. `chat.completions`. */
  endpoint: string;
  model: string | null;
  /** The request's service tier, for the metrics of tokens and cost. */
  tier?: string;
  /** The most the request can cost; reserved before anything is sent to an engine. */
  maxCostMicros: number;
  /** How long the request may hold the money before a sweep gives it back (long jobs ask for more). */
  holdSeconds?: number;
}
