/**
 * What one request did beyond Zona, filled in by the layers that know it (the key check, the
 * router, billing, the streams) and read once at its end by the access log line and the metrics.
 * Services receive it inside their context (never the Fastify request), so the layers stay apart.
 */
export interface RequestTrace {
  requestId: string;
  /** `performance.now()` when the request arrived. */
  startedAt: number;
  /** The API key's id (never the key). */
  keyId?: string;
  /** The catalogue model asked for. */
  model?: string;
  tier?: string;
  /** The machine and zone that answered (the last one tried when none did). */
  machine?: string;
  zone?: string;
  /** Milliseconds from sending to the machine until its answer began (status and headers). */
  upstreamMs?: number;
  /** Milliseconds from the request's arrival until the first generated token was sent. */
  firstTokenMs?: number;
  promptTokens?: number;
  completionTokens?: number;
  /** What the request cost, in the installation's currency, once settled. */
  cost?: number;
}
