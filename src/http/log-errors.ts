import { stdSerializers } from "pino";
import { UpstreamError } from "../engines/types.ts";
import { quotingErrors, serializeUpstreamError, withoutEngineWords } from "../engines/upstream-log.ts";

// Drizzle words a failed statement as "Failed query: <sql>\nparams: <values>": the values may be a
// user's text, a token's hash or an email address, none of which may reach a log.
const PARAMS = /\nparams: [\s\S]*?(?=\n {4}at |$)/;

/**
 * pino's error serializer, with the parameters of failed queries left out (message, stack and causes),
 * and upstream failures without the engine's words, which may repeat the request (upstream-log.ts).
 */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  if (error instanceof UpstreamError) return serializeUpstreamError(error);
  const serialized = withoutParams(stdSerializers.err(error));
  const quoting = quotingErrors(error);
  return quoting.length === 0 ? serialized : withoutWords(serialized, quoting);
}

function withoutParams(
  serialized: ReturnType<typeof stdSerializers.err>,
): ReturnType<typeof stdSerializers.err> {
  const result: Record<string, unknown> & typeof serialized = { ...serialized };
  // DrizzleQueryError also carries them as a property of its own.
  if ("params" in result) result.params = "[not logged]";
  if (typeof result.message === "string")
    result.message = result.message.replace(PARAMS, "\nparams: [not logged]");
  if (typeof result.stack === "string") result.stack = result.stack.replace(PARAMS, "\nparams: [not logged]");
  return result;
}

// Causes are folded into the message and stack; aggregated and held errors are nested objects.
function withoutWords<T>(value: T, quoting: readonly UpstreamError[], depth = 0): T {
  if (typeof value === "string") return withoutEngineWords(value, quoting) as T;
  if (typeof value !== "object" || value === null || depth > 8) return value;
  if (Array.isArray(value)) return value.map((item) => withoutWords(item, quoting, depth + 1)) as T;
  const entries = Object.entries(value).map(([key, item]) => [key, withoutWords(item, quoting, depth + 1)]);
  return Object.fromEntries(entries) as T;
}
