import { createHash, randomBytes } from "node:crypto";

/** A new random token (refresh, email verification, password reset): 32 bytes, base64url, with a prefix. */
export function newOpaqueToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString("base64url")}`;
}

/** What is stored of an opaque token: its SHA-256, hex. */
export function hashOpaqueToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
