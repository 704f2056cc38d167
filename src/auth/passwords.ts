import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

/** scrypt's cost: N (CPU and memory), r (block size), p (parallelism). */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

// OWASP's scrypt parameters: N=2^17, r=8, p=1. They need 128 * N * r = 128 MiB, above Node's default maxmem.
export const OWASP_SCRYPT: Readonly<ScryptCost> = Object.freeze({ N: 2 ** 17, r: 8, p: 1 });
const KEY_LENGTH = 32;
const MAX_PASSWORD_LENGTH = 1024;

let cost: Readonly<ScryptCost> = OWASP_SCRYPT;

/**
 * Tests only (nothing in Zona calls it): the cost of the hashes made from now on in this process,
 * OWASP's until then. The test apps hash hundreds of passwords, each 128 MiB and about 0.4 s at
 * OWASP's cost. A stored hash keeps the parameters it was made with, and checking a password
 * against it costs what making it did.
 */
export function setScryptCostForTests(next: Readonly<ScryptCost>): void {
  cost = next;
}

/** Hashes a password as `scrypt$N$r$p$salt$hash` (base64url), so parameters can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const params = cost;
  const salt = randomBytes(16);
  const hash = await derive(password, salt, params);
  return [
    "scrypt",
    params.N,
    params.r,
    params.p,
    salt.toString("base64url"),
    hash.toString("base64url"),
  ].join("$");
}

/** Checks a password against a stored hash in constant time; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt" || password.length > MAX_PASSWORD_LENGTH) return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (!N || !r || !p) return false;
  const salt = Buffer.from(parts[4] ?? "", "base64url");
  const expected = Buffer.from(parts[5] ?? "", "base64url");
  if (expected.length !== KEY_LENGTH) return false;
  const actual = await derive(password, salt, { N, r, p });
  return timingSafeEqual(actual, expected);
}

function derive(
  password: string,
  salt: Buffer,
  params: { N: number; r: number; p: number },
): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFKC"), salt, KEY_LENGTH, options, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

/** The longest password accepted; longer ones are refused before hashing. */
export { MAX_PASSWORD_LENGTH };
