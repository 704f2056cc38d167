import { UpstreamError, type UpstreamFailure } from "./types.ts";

const IDENTIFIER = /^[A-Za-z0-9_.-]{1,64}$/;
/** The longest part of an engine's message kept in an UpstreamError's message. */
const SHOWN_CHARACTERS = 200;

/** A value an engine sent (an error type or code) as a log may carry it: a short identifier, else undefined. */
export function identifierOf(value: unknown): string | undefined {
  const text = typeof value === "number" && Number.isInteger(value) ? String(value) : value;
  return typeof text === "string" && IDENTIFIER.test(text) ? text : undefined;
}

/**
 * A failure whose message is Zona's `reason` followed by the start of the engine's `message`
 * (`the upstream answered 400: …`). The error keeps the words for whoever handles it; a log line
 * carries `reason`, the engine's `type` and `code` when they are identifiers, and the length of the
 * message (upstream-log.ts).
 */
export function quotingEngine(
  kind: UpstreamFailure,
  reason: string,
  message: string,
  engine: { status?: number; type?: unknown; code?: unknown } = {},
): UpstreamError {
  let shown = message.replace(/\s+/g, " ").trim();
  if (shown.length > SHOWN_CHARACTERS) shown = `${shown.slice(0, SHOWN_CHARACTERS - 1)}…`;
  const type = identifierOf(engine.type);
  const code = identifierOf(engine.code);
  return new UpstreamError(kind, shown ? `${reason}: ${shown}` : reason, engine.status, {
    reason,
    ...(type !== undefined ? { type } : {}),
    ...(code !== undefined ? { code } : {}),
    messageChars: message.length,
  });
}
