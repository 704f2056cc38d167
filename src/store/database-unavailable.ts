// SQLSTATE classes and codes that say the server cannot be used now, not that the query is wrong:
// connection exceptions (08), shutdown or start-up in progress (57P01-57P03), too many connections.
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300)$/;
const UNAVAILABLE_SYSCALLS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
]);
// node-postgres words these without a code.
const UNAVAILABLE_MESSAGES = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error",
  "Cannot use a pool after calling end",
];

/**
 * The driver's error when a failure comes from a database that cannot be reached or is restarting,
 * looking through the `cause` chain (Drizzle wraps the driver's error); undefined otherwise. Such
 * failures become a 503 the client may retry, not a 500. The driver's own message is safe to log
 * (it names no query parameter, unlike Drizzle's wrapper).
 */
export function databaseUnavailableCause(error: unknown): Error | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_SYSCALLS.has(code)))
      return current;
    const message = current.message;
    if (
      UNAVAILABLE_MESSAGES.some((words) => message.includes(words)) &&
      !message.startsWith("Failed query")
    ) {
      return current;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
