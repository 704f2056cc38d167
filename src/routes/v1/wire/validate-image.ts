import { isIP } from "node:net";
import type { ModelConfig } from "../../../config/schema.ts";
import { imageNotSupported, unacceptableImage } from "../../../errors/catalogue.ts";
import type { ImageRef } from "./validate-messages.ts";

/** Images in chat input: up to 8 MB each. */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

const DATA_URI = /^data:([^,;]*)((?:;[^,;]*)*),/i;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Checks the images of a request once its model is known: 400 on a model that does not read images,
 * and for an image that is not a PNG, JPEG, WebP or GIF (judged by its bytes, not the declared type),
 * is over 8 MB, or is not at a public http(s) address. A data URI is rewritten with the type its
 * bytes show; an address is passed on unfetched.
 */
export function checkImages(images: readonly ImageRef[], model: ModelConfig): void {
  const first = images[0];
  if (first && !model.vision) throw imageNotSupported(first.param, model.id);
  for (const image of images)
    image.part.image_url.url = acceptableImageUrl(image.param, image.part.image_url.url);
}

function acceptableImageUrl(param: string, url: string): string {
  if (/^data:/i.test(url)) return acceptableDataUri(param, url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw unacceptableImage(param, "the url must be a data URI or an http(s) address.");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw unacceptableImage(param, "the url must be a data URI or an http(s) address.");
  }
  // The machine that reads the image fetches it from inside the operator's network.
  if (isPrivateHost(parsed.hostname)) throw unacceptableImage(param, "the address must be public.");
  return url;
}

function acceptableDataUri(param: string, url: string): string {
  const header = DATA_URI.exec(url.slice(0, 256));
  if (!header || !(header[2] ?? "").toLowerCase().split(";").includes("base64")) {
    throw unacceptableImage(param, "a data URI must be base64-encoded (data:image/png;base64,...).");
  }
  const payload = url.slice(header[0].length);
  const padding = payload.endsWith("==") ? 2 : payload.endsWith("=") ? 1 : 0;
  const bytes = Math.floor((payload.length * 3) / 4) - padding;
  if (bytes > MAX_IMAGE_BYTES) throw unacceptableImage(param, "an image may be at most 8 MB.");
  if (payload.length % 4 !== 0 || !BASE64.test(payload) || bytes === 0) {
    throw unacceptableImage(param, "the data URI is not valid base64.");
  }
  const type = imageTypeOf(Buffer.from(payload.slice(0, 24), "base64"));
  if (!type) throw unacceptableImage(param, "images must be PNG, JPEG, WebP or GIF.");
  return header[1]?.toLowerCase() === type && header[2]?.toLowerCase() === ";base64"
    ? url
    : `data:${type};base64,${payload}`;
}

/** The image type its first bytes show (PNG, JPEG, WebP, GIF), or undefined. */
export function imageTypeOf(head: Buffer): string | undefined {
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return "image/png";
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "image/jpeg";
  const ascii = head.toString("latin1");
  if (ascii.startsWith("GIF87a") || ascii.startsWith("GIF89a")) return "image/gif";
  if (ascii.startsWith("RIFF") && ascii.slice(8, 12) === "WEBP") return "image/webp";
  return undefined;
}

function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".internal")) return true;
  const family = isIP(host);
  if (family === 4) return isPrivateV4(host);
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host);
    if (mapped?.[1]) return isPrivateV4(mapped[1]);
    // The URL parser writes a mapped IPv4 address in hex: ::ffff:7f00:1.
    const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
    if (hex?.[1] && hex[2]) {
      const high = Number.parseInt(hex[1], 16);
      const low = Number.parseInt(hex[2], 16);
      return isPrivateV4(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
    }
    return host === "::" || host === "::1" || /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
  }
  return false;
}

function isPrivateV4(address: string): boolean {
  const [a = 0, b = 0] = address.split(".").map(Number);
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127)
  );
}
