import { describe, expect, it } from "vitest";
import type { AccountsService } from "../../src/services/accounts.ts";
import { AppSessions } from "../../src/services/auth/app-sessions.ts";
import type { AccountRow } from "../../src/store/repositories/accounts.ts";
import type { ServiceSecretsRepository } from "../../src/store/repositories/service-secrets.ts";

/** An account whose reads the test answers one by one. */
function heldAccounts(row: AccountRow) {
  const pending: Array<(row: AccountRow) => void> = [];
  let current = row;
  const accounts = {
    get: (_id: string) =>
      new Promise<AccountRow>((resolve) => {
        pending.push(resolve);
      }),
  } as unknown as AccountsService;
  return {
    accounts,
    set(change: Partial<AccountRow>) {
      current = { ...current, ...change };
    },
    /** Answers the oldest read still waiting with the account as it is now (or as `as`). */
    answer(as: AccountRow = current) {
      const next = pending.shift();
      if (!next) throw new Error("no read is waiting");
      next(as);
    },
    waiting: () => pending.length,
    current: () => current,
  };
}

const SECRETS = {
  getOrCreate: async (_name: string, make: () => string) => make(),
} as unknown as ServiceSecretsRepository;

const ROW = {
  id: "acc-1",
  email: "someone@example.com",
  emailVerified: false,
  disabled: false,
  language: "en",
  passwordHash: "scrypt$stamp",
} as AccountRow;

/** Sessions over an account whose reads the test answers, and an access token of it. */
async function signedIn(row: AccountRow) {
  const held = heldAccounts(row);
  const sessions = new AppSessions({
    accounts: held.accounts,
    secrets: SECRETS,
    now: () => new Date(),
    accessSeconds: 900,
  });
  const issuing = sessions.accessToken(row.id);
  await expect.poll(held.waiting).toBe(1);
  held.answer();
  return { held, sessions, token: await issuing };
}

describe("Authentication / App API: the user behind an access token is never older than the last change", () => {
  it("a read that began before the email was verified does not put the unverified user back (next request: verified)", async () => {
    const { held, sessions, token } = await signedIn(ROW);

    // A request reads the account while it is still unverified...
    const early = sessions.userOfAccessToken(token);
    await expect.poll(held.waiting).toBe(1);
    const unverified = held.current();
    // ...meanwhile the address is confirmed and the cache forgets the account...
    held.set({ emailVerified: true });
    sessions.forget(ROW.id);
    // ...and the early read ends with what it saw.
    held.answer(unverified);
    expect((await early)?.emailVerified).toBe(false);

    // The next request reads the account again: verified.
    const next = sessions.userOfAccessToken(token);
    await expect.poll(held.waiting).toBe(1);
    held.answer();
    expect((await next)?.emailVerified).toBe(true);
  });

  it("a read that began before the account was disabled does not let the account in again for the cache's time", async () => {
    const { held, sessions, token } = await signedIn(ROW);

    const early = sessions.userOfAccessToken(token);
    await expect.poll(held.waiting).toBe(1);
    const enabled = held.current();
    held.set({ disabled: true });
    sessions.forgetAll();
    held.answer(enabled);
    expect(await early).toBeDefined();

    const next = sessions.userOfAccessToken(token);
    await expect.poll(held.waiting).toBe(1);
    held.answer();
    expect(await next).toBeUndefined();
  });

  it("without a change in between, the user is read once and kept", async () => {
    const { held, sessions, token } = await signedIn({ ...ROW, emailVerified: true });
    const first = sessions.userOfAccessToken(token);
    await expect.poll(held.waiting).toBe(1);
    held.answer();
    expect((await first)?.emailVerified).toBe(true);
    expect((await sessions.userOfAccessToken(token))?.emailVerified).toBe(true);
    expect(held.waiting()).toBe(0);
  });
});
