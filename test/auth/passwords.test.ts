import { beforeAll, describe, expect, it } from "vitest";
import {
  hashPassword,
  OWASP_SCRYPT,
  setScryptCostForTests,
  verifyPassword,
} from "../../src/auth/passwords.ts";

describe("Passwords: scrypt with OWASP parameters, constant-time check", () => {
  // The test apps lower the cost for the files that run before this one in the same worker.
  beforeAll(() => setScryptCostForTests(OWASP_SCRYPT));

  it("stores N=2^17, r=8, p=1 with a random salt, and verifies only the right password", async () => {
    const hash = await hashPassword("correct horse battery staple");
    expect(hash).toMatch(/^scrypt\$131072\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await hashPassword("correct horse battery staple")).not.toBe(hash);
    expect(await verifyPassword("correct horse battery staple", hash)).toBe(true);
    expect(await verifyPassword("correct horse battery stapl", hash)).toBe(false);
    expect(await verifyPassword("", hash)).toBe(false);
  });

  it("never matches a malformed stored hash", async () => {
    for (const stored of [
      "",
      "plain",
      "scrypt$1$2$3",
      "bcrypt$1$8$1$abc$def",
      "scrypt$131072$8$1$c2FsdA$c2hvcnQ",
    ]) {
      expect(await verifyPassword("anything", stored)).toBe(false);
    }
  });
});
