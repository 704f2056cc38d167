import { UpstreamError } from "./types.ts";

/** How a log line describes an upstream failure. */
export interface UpstreamLogFields {
  error_kind: UpstreamError["kind"];
  upstream_status?: number;
  /** Zona's own words for the failure. */
  reason: string;
  upstream_type?: string;
  upstream_code?: string;
  /** The length of the engine's message, which is not logged. */
  message_chars?: number;
}

/**
 * What a log line says of an upstream failure: its kind, the HTTP status, Zona's reason and, of an
 * engine's message, only its type and code (identifiers) and its length. The message itself may
 * repeat the request (a prompt, a user's messages), which a log never holds.
 */
export function upstreamLogFields(error: UpstreamError): UpstreamLogFields {
  const engine = error.engine;
  return {
    error_kind: error.kind,
    ...(error.status !== undefined ? { upstream_status: error.status } : {}),
    reason: engine?.reason ?? error.message,
    ...(engine?.type !== undefined ? { upstream_type: engine.type } : {}),
    ...(engine?.code !== undefined ? { upstream_code: engine.code } : {}),
    ...(engine !== undefined ? { message_chars: engine.messageChars } : {}),
  };
}

/** An engine's own text that is no UpstreamError (a failed video job's reason), as a log carries it. */
export function engineTextLogFields(text: string): { message_chars: number } {
  return { message_chars: text.length };
}

/** An UpstreamError as the `err` of a log line: the fields above, and the stack without the engine's words. */
export function serializeUpstreamError(error: UpstreamError): Record<string, unknown> {
  const { reason, ...fields } = upstreamLogFields(error);
  return {
    type: "UpstreamError",
    message: reason,
    stack: withoutEngineWords(error.stack ?? "", [error]),
    ...fields,
    retryable: error.retryable,
  };
}

/**
 * The UpstreamErrors that quote an engine among an error, its causes, the errors it aggregates and
 * the errors it holds (what pino's serializer writes of them).
 */
export function quotingErrors(error: Error, seen = new Set<Error>()): UpstreamError[] {
  if (seen.has(error)) return [];
  seen.add(error);
  const found = error instanceof UpstreamError && error.engine !== undefined ? [error] : [];
  const record = error as unknown as Record<string, unknown>;
  const errors = Array.isArray(record.errors) ? record.errors : [];
  for (const value of [record.cause, ...errors, ...Object.values(record)]) {
    if (value instanceof Error) found.push(...quotingErrors(value, seen));
  }
  return found;
}

/** A text (a serialized message or stack) with the messages of `errors` replaced by Zona's reasons. */
export function withoutEngineWords(text: string, errors: readonly UpstreamError[]): string {
  let result = text;
  for (const error of errors) {
    const reason = error.engine?.reason;
    if (reason !== undefined && error.message !== reason) result = result.split(error.message).join(reason);
  }
  return result;
}
