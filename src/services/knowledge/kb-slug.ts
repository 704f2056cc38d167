import { randomBytes } from "node:crypto";

/** Longest slug: short enough for URLs, long enough for a name. */
export const KB_SLUG_MAX = 63;
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Whether a string is a well-formed slug (lower-case letters, digits and inner dashes). */
export function isKbSlug(value: string): boolean {
  return SLUG.test(value);
}

/**
 * The slug a name suggests: accents dropped, lower-case, every other run of characters a dash
 * ("Rapporti 2025 – Ticino" -> "rapporti-2025-ticino"); a name with no letter or digit gives "kb".
 */
export function slugOf(name: string): string {
  const plain = name
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, KB_SLUG_MAX - 7)
    .replace(/-+$/g, "");
  return plain === "" ? "kb" : plain;
}

/** The slug with a short random ending, for a name whose slug is taken. */
export function withSuffix(slug: string): string {
  return `${slug}-${randomBytes(3).toString("hex")}`;
}
