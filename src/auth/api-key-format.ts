import { createHash, randomBytes } from "node:crypto";

/** Every API key starts with this. */
export const API_KEY_PREFIX = "sk-";
const KEY_PREFIX = API_KEY_PREFIX;
// 32 random bytes in base64url are 43 characters; longer keys (from another generator) are accepted too.
const KEY_PATTERN = /^sk-[A-Za-z0-9_-]{43,200}$/;

/** A fresh API key: `sk-` and 32 random bytes. It is shown once and only its hash is stored. */
export function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** Whether a token has the shape of a key of this service. */
export function looksLikeApiKey(token: string): boolean {
  return KEY_PATTERN.test(token);
}

/** Keys carry 256 random bits, so one SHA-256 is enough; a slow hash would only slow every request. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** The first characters of a key, kept to tell keys apart in lists. */
export function displayPrefix(key: string): string {
  return `${key.slice(0, KEY_PREFIX.length + 8)}...`;
}
