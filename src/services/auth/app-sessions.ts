import { randomBytes } from "node:crypto";
import { AccessTokens } from "../../auth/access-tokens.ts";
import type { Language } from "../../config/names.ts";
import { isNotFound } from "../../errors/catalogue.ts";
import type { ServiceSecretsRepository } from "../../store/repositories/service-secrets.ts";
import type { AccountsService } from "../accounts.ts";

/** The signed-in user behind an access token. */
export interface SessionUser {
  id: string;
  email: string;
  emailVerified: boolean;
  language: Language;
}

const SIGNING_SECRET = "app_access_token_signing";
// A disabled account must stop working quickly, yet every request should not read the account.
const USER_CACHE_MS = 5_000;

/**
 * Access tokens of the app API: signed with a secret the service makes on first start and keeps
 * in the database (so every instance accepts every token), checked against the account on use.
 */
export class AppSessions {
  private readonly accounts: AccountsService;
  private readonly secrets: ServiceSecretsRepository;
  private readonly now: () => Date;
  readonly accessSeconds: number;
  private tokens: Promise<AccessTokens> | undefined;
  private readonly users = new Map<
    string,
    { user: SessionUser | undefined; stamp: string | undefined; until: number }
  >();
  // Counts the forgets: an account read that began before one must not put back what was forgotten
  // (a request that read an unverified or enabled account while it was verified or disabled).
  private forgets = 0;

  constructor(deps: {
    accounts: AccountsService;
    secrets: ServiceSecretsRepository;
    now: () => Date;
    accessSeconds: number;
  }) {
    this.accounts = deps.accounts;
    this.secrets = deps.secrets;
    this.now = deps.now;
    this.accessSeconds = deps.accessSeconds;
  }

  /** A new access token for an account, stamped with its current password (a reset ends it). */
  async accessToken(accountId: string): Promise<string> {
    const signer = await this.signer();
    const account = await this.accounts.get(accountId);
    return signer.sign(accountId, this.now(), this.accessSeconds, signer.passwordStamp(account.passwordHash));
  }

  /** The user of a valid access token whose account is enabled; undefined otherwise. */
  async userOfAccessToken(token: string): Promise<SessionUser | undefined> {
    const signer = await this.signer();
    const claims = signer.verify(token, this.now());
    if (!claims) return undefined;
    const now = Date.now();
    const cached = this.users.get(claims.sub);
    // A token issued before the password last changed (a reset by the address's owner) is over; a
    // stamp that differs from the cached one is checked against the account (the cache may be older).
    if (cached && cached.until > now && claims.pwd === cached.stamp) return cached.user;
    // Only "no such account" makes the token worthless: a database that does not answer is a 503,
    // not a 401 that would sign the user out.
    const forgetsBefore = this.forgets;
    const account = await this.accounts.get(claims.sub).catch((error: unknown) => {
      if (isNotFound(error)) return undefined;
      throw error;
    });
    const user =
      account && !account.disabled
        ? {
            id: account.id,
            email: account.email,
            emailVerified: account.emailVerified,
            language: account.language as Language,
          }
        : undefined;
    const stamp = account ? signer.passwordStamp(account.passwordHash) : undefined;
    if (this.forgets === forgetsBefore) {
      if (this.users.size > 10_000) this.users.clear();
      this.users.set(claims.sub, { user, stamp, until: now + USER_CACHE_MS });
    }
    return claims.pwd === stamp ? user : undefined;
  }

  /** Sets a signed-in user's account language; the cached user is forgotten so the next request sees it. */
  async setLanguage(accountId: string, language: Language) {
    const account = await this.accounts.setLanguage(accountId, language);
    this.forget(accountId);
    return account;
  }

  /** Forgets what is cached of an account (disabled, verified, language changed). */
  forget(accountId: string): void {
    this.forgets++;
    this.users.delete(accountId);
  }

  /** Forgets every cached user (an operator disabled or enabled an account). */
  forgetAll(): void {
    this.forgets++;
    this.users.clear();
  }

  private signer(): Promise<AccessTokens> {
    this.tokens ??= this.secrets
      .getOrCreate(SIGNING_SECRET, () => randomBytes(32).toString("base64url"))
      .then((secret) => new AccessTokens(Buffer.from(secret, "base64url")));
    // A failed read (database briefly away) is tried again on the next request.
    this.tokens.catch(() => {
      this.tokens = undefined;
    });
    return this.tokens;
  }
}
