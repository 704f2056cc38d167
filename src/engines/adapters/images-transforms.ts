/**
 * Pure translations for OpenAI-style image servers (`POST /v1/images/generations`: vLLM-Omni,
 * SGLang diffusion, stable-diffusion.cpp's server, LocalAI): one picture asked, the first item of
 * `data` read back, as base64 or as a link to fetch.
 */
import { upstreamModel } from "../served-models.ts";
import type { GeneratedImage, ImageCall, MachineConfig } from "../types.ts";
import { UpstreamError } from "../types.ts";
import { expectPayload, isPayload, type Payload, throwIfErrorPayload } from "./payload.ts";

/**
 * The body of `POST /v1/images/generations`: always one picture as base64 (links would need a
 * second request); `seed` top-level, where vLLM-Omni, SGLang and LocalAI read it.
 */
export function imagesRequest(machine: MachineConfig, call: ImageCall): Payload {
  const body: Payload = {
    model: upstreamModel(machine, call.model),
    prompt: call.prompt,
    size: call.size,
    n: 1,
    response_format: "b64_json",
  };
  if (call.seed !== undefined) body.seed = call.seed;
  return body;
}

/** Where the picture of an answer is: its bytes (from base64 or a data: URL), or a link to fetch. */
export type ImageAnswer = { kind: "bytes"; data: Buffer } | { kind: "url"; url: string };

/** The first picture of an answer; an empty `data`, an item with neither field or bad base64 is a `protocol` failure. */
export function fromImagesAnswer(raw: unknown): ImageAnswer {
  if (isPayload(raw)) throwIfErrorPayload(raw);
  const body = expectPayload(raw, "an image answer");
  const first: unknown = Array.isArray(body.data) ? body.data[0] : undefined;
  if (!isPayload(first))
    throw new UpstreamError("protocol", "the upstream sent an image answer without a picture");
  if (typeof first.b64_json === "string" && first.b64_json.length > 0) {
    return { kind: "bytes", data: decodeBase64(first.b64_json) };
  }
  if (typeof first.url === "string" && first.url.length > 0) {
    const dataUrl = /^data:[^,]*;base64,/i.exec(first.url);
    if (dataUrl) return { kind: "bytes", data: decodeBase64(first.url.slice(dataUrl[0].length)) };
    return { kind: "url", url: first.url };
  }
  throw new UpstreamError("protocol", "the upstream sent a picture with neither b64_json nor url");
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Strict base64 (Buffer.from skips what it does not understand, which would hide a broken answer). */
function decodeBase64(text: string): Buffer {
  // Some servers prefix a data URL even in b64_json.
  const clean = text.replace(/^data:[^,]*;base64,/i, "").replace(/\s+/g, "");
  if (!BASE64.test(clean) || clean.length % 4 === 1) {
    throw new UpstreamError("protocol", "the upstream sent a picture that is not valid base64");
  }
  return Buffer.from(clean, clean.includes("-") || clean.includes("_") ? "base64url" : "base64");
}

/** The content type of PNG, JPEG and WebP bytes, from their signature; undefined for anything else. */
export function detectImageType(bytes: Buffer): string | undefined {
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.readUInt32BE(4) === 0x0d0a1a0a) {
    return "image/png";
  }
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (
    bytes.length >= 12 &&
    bytes.toString("latin1", 0, 4) === "RIFF" &&
    bytes.toString("latin1", 8, 12) === "WEBP"
  ) {
    return "image/webp";
  }
  return undefined;
}

/** The bytes as a picture, or a `protocol` failure naming who sent something else. */
export function expectImage(bytes: Buffer, who: string): GeneratedImage {
  const mime = detectImageType(bytes);
  if (mime === undefined) {
    throw new UpstreamError("protocol", `${who} sent a picture that is not PNG, JPEG or WebP`);
  }
  return { data: bytes, mime };
}
