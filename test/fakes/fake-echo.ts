import { isMultipart } from "./fake-multipart.ts";
import type { FakeReply, FakeRequest } from "./fake-server.ts";

/**
 * How a fake's error answers word themselves: `none` a fixed message ("fake failure"); `json`
 * vLLM's error body (`{"error":{"message":"bad request: <the request>","type":…,"code":<status>}}`);
 * `text` a plain-text body repeating the request. Engines do this (vLLM's validation errors quote
 * the input), so a gateway must not write their words to its log.
 */
export type FakeErrorEcho = "none" | "json" | "text";

/** The request as an engine that quotes it would: the JSON or plain body, or the text fields of an upload. */
export function requestText(request: FakeRequest): string {
  const body = request.body;
  if (body === undefined) return "";
  if (typeof body === "string") return body;
  if (isMultipart(body)) return JSON.stringify(body.fields);
  return JSON.stringify(body);
}

/** An error answer of `status` that repeats the whole request. */
export function echoingError(status: number, echo: "json" | "text", request: FakeRequest): FakeReply {
  if (echo === "text") {
    const text = `Internal Server Error: ${requestText(request)}`;
    return { type: "binary", status, contentType: "text/plain; charset=utf-8", body: Buffer.from(text) };
  }
  const type = status >= 500 ? "InternalServerError" : "BadRequestError";
  const message = `bad request: ${requestText(request)}`;
  return { type: "json", status, body: { error: { message, type, code: status } } };
}

/**
 * The piece that fails a stream mid-way with `message`: vLLM's SSE event `data: {"error": …}`, or
 * Ollama's NDJSON line `{"error": "…"}`.
 */
export function midStreamError(contentType: string, message: string): string {
  if (contentType === "text/event-stream") {
    const error = { message, type: "InternalServerError", code: 500 };
    return `data: ${JSON.stringify({ error })}\n\n`;
  }
  return `${JSON.stringify({ error: message })}\n`;
}
