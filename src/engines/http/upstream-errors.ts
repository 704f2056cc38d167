import { quotingEngine } from "../engine-words.ts";
import { UpstreamError } from "../types.ts";

/** Whether the failure happened before the answer's headers arrived or while its body was read. */
export type UpstreamPhase = "request" | "body";

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_DESTROYED",
]);

const TIMEOUT_CODES = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT",
]);

/**
 * Turns whatever the HTTP client threw into an UpstreamError. Messages name the failure, never
 * the upstream's address or key (the client's own messages carry host and port, so they are not
 * reused). An aborted signal wins over the error it caused: `aborted`, or `timeout` when the
 * signal was a timeout (AbortSignal.timeout).
 */
export function toUpstreamError(error: unknown, signal: AbortSignal, phase: UpstreamPhase): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (signal.aborted) return abortError(signal);
  const code = errorCode(error);
  if (code !== undefined && TIMEOUT_CODES.has(code)) {
    const what =
      code === "UND_ERR_CONNECT_TIMEOUT"
        ? "connecting to the upstream timed out"
        : code === "UND_ERR_BODY_TIMEOUT"
          ? "the upstream went silent in the middle of its answer"
          : "the upstream did not answer in time";
    return new UpstreamError("timeout", `${what} (${code})`);
  }
  if (code === "UND_ERR_ABORTED" || (error instanceof Error && error.name === "AbortError")) {
    return new UpstreamError("aborted", "the upstream request was cancelled");
  }
  if (code !== undefined && CONNECTION_CODES.has(code)) {
    return phase === "request"
      ? new UpstreamError("connect", `could not reach the upstream (${code})`)
      : new UpstreamError("connect", `the upstream connection broke in the middle of the answer (${code})`);
  }
  if (phase === "request" && code === undefined) {
    return new UpstreamError("connect", "the upstream request failed");
  }
  return new UpstreamError("protocol", `the upstream answer could not be read${code ? ` (${code})` : ""}`);
}

/** The failure for a request whose signal fired. */
export function abortError(signal: AbortSignal): UpstreamError {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === "TimeoutError") {
    return new UpstreamError("timeout", "the upstream request timed out");
  }
  return new UpstreamError("aborted", "the upstream request was cancelled");
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") return code;
  // Connecting to a name with several addresses fails with an AggregateError of the attempts.
  if (error instanceof AggregateError) {
    for (const inner of error.errors) {
      const innerCode = errorCode(inner);
      if (innerCode !== undefined) return innerCode;
    }
  }
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error ? errorCode(cause) : undefined;
}

/**
 * The `status` failure for a non-2xx answer, quoting the upstream's error message (OpenAI
 * `error.message`, Ollama and TEI `error`, FastAPI `detail`, or plain text) with its type and code
 * (see engine-words.ts: logs carry the facts, not the words). The machine's url and key are cut out
 * in case the upstream echoes them. With `keepAnswer`, the body parsed as JSON (the secrets cut out
 * of it too) is kept as the failure's `answer`; a body that is not JSON leaves it undefined.
 */
export function statusError(
  status: number,
  bodyText: string,
  secrets: Array<string | undefined>,
  keepAnswer = false,
): UpstreamError {
  const said = upstreamSays(bodyText);
  const error = quotingEngine("status", `the upstream answered ${status}`, redacted(said.message, secrets), {
    ...said,
    status,
  });
  if (keepAnswer) {
    let answer: unknown;
    try {
      answer = JSON.parse(redacted(bodyText, secrets));
    } catch {
      answer = undefined;
    }
    Object.defineProperty(error, "answer", { value: answer, enumerable: false });
  }
  return error;
}

function redacted(text: string, secrets: Array<string | undefined>): string {
  let result = text;
  for (const secret of secrets) {
    if (secret !== undefined && secret.length > 0) result = result.split(secret).join("[redacted]");
  }
  return result;
}

interface UpstreamSays {
  message: string;
  type?: unknown;
  code?: unknown;
}

function upstreamSays(text: string): UpstreamSays {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { message: text };
  }
  if (typeof body === "string") return { message: body };
  if (typeof body !== "object" || body === null) return { message: text };
  const record = body as Record<string, unknown>;
  const error = record.error;
  const inner = typeof error === "object" && error !== null ? (error as Record<string, unknown>) : record;
  return { message: upstreamMessage(record, text), type: inner.type, code: inner.code };
}

function upstreamMessage(record: Record<string, unknown>, text: string): string {
  const error = record.error;
  if (typeof error === "string") return error;
  const nodeError = comfyUiNodeError(record.node_errors);
  if (nodeError !== undefined) return nodeError;
  if (typeof error === "object" && error !== null) {
    const message = (error as Record<string, unknown>).message;
    if (typeof message === "string") return message;
  }
  if (typeof record.message === "string") return record.message;
  const detail = record.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) {
    const first: unknown = detail[0];
    if (typeof first === "object" && first !== null) {
      const msg = (first as Record<string, unknown>).msg;
      if (typeof msg === "string") return msg;
    }
  }
  return text;
}

/** The first of ComfyUI's `node_errors` (a refused workflow): node, class and message. */
function comfyUiNodeError(nodeErrors: unknown): string | undefined {
  if (typeof nodeErrors !== "object" || nodeErrors === null) return undefined;
  for (const [id, value] of Object.entries(nodeErrors as Record<string, unknown>)) {
    const node = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
    const first: unknown = Array.isArray(node.errors) ? node.errors[0] : undefined;
    if (typeof first !== "object" || first === null) continue;
    const { message, details } = first as Record<string, unknown>;
    const what = [message, details].filter((part) => typeof part === "string" && part.length > 0).join(": ");
    const type = typeof node.class_type === "string" ? ` (${node.class_type})` : "";
    return `node ${id}${type}: ${what || "invalid"}`;
  }
  return undefined;
}
