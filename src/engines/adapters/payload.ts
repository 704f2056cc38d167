import { randomBytes } from "node:crypto";
import { quotingEngine } from "../engine-words.ts";
import { UpstreamError } from "../types.ts";

/** A JSON object as it came from an upstream, before its fields are checked. */
export type Payload = Record<string, unknown>;

/** Whether a value is a JSON object (not null, not an array). */
export function isPayload(value: unknown): value is Payload {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value as an object, or a `protocol` failure naming what was expected. */
export function expectPayload(value: unknown, what: string): Payload {
  if (!isPayload(value))
    throw new UpstreamError("protocol", `the upstream sent ${what} that is not an object`);
  return value;
}

/** A string field, or undefined. */
export function stringField(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A finite number field, or undefined. */
export function numberField(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/**
 * An error an upstream reports inside a 2xx answer (vLLM sends `{"error": {...}}` or an object
 * of type "error" as a stream event; Ollama an `{"error": "..."}` line): a `status` failure with
 * the upstream's code when it gives one, 500 otherwise.
 */
export function throwIfErrorPayload(payload: Payload): void {
  const error = payload.error;
  const inner = isPayload(error) ? error : payload.object === "error" ? payload : undefined;
  const message = typeof error === "string" ? error : stringField(inner?.message);
  if (message === undefined && inner === undefined) return;
  const code = numberField(inner?.code);
  const status = code !== undefined && code >= 400 && code <= 599 ? code : 500;
  throw quotingEngine("status", "the upstream failed during the answer", message ?? "", {
    status,
    type: inner?.type,
    code: inner?.code,
  });
}

/** An id such as `chatcmpl-3f2a...`, for upstreams that do not give one. */
export function newId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("hex")}`;
}

/** Now, in Unix seconds (the unit of `created`). */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * An embedding vector: an array of numbers, or the base64 of little-endian float32s that
 * OpenAI-style servers send for `encoding_format: "base64"`.
 */
export function vectorField(value: unknown, what: string): number[] {
  if (Array.isArray(value) && value.every((x) => typeof x === "number")) return value as number[];
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "base64");
    if (bytes.length % 4 === 0) {
      const floats = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
      return Array.from(floats);
    }
  }
  throw new UpstreamError("protocol", `the upstream sent ${what} that is not a vector`);
}
