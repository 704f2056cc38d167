import { stdSerializers } from "pino";

// Drizzle words a failed statement as "Failed query: <sql>\nparams: <values>": the values may be a
// user's text, a token's hash or an email address, none of which may reach a log.
const PARAMS = /\nparams: [\s\S]*?(?=\n {4}at |$)/;

/** pino's error serializer, with the parameters of failed queries left out (message, stack and causes). */
export function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  return withoutParams(stdSerializers.err(error));
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
