import { randomBytes } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import { hashOpaqueToken, newOpaqueToken } from "../../auth/opaque-tokens.ts";
import { hashPassword, verifyPassword } from "../../auth/passwords.ts";
import { invalidCredentials, unauthorized } from "../../errors/catalogue.ts";
import type { AccountRow } from "../../store/repositories/accounts.ts";
import type { RefreshTokensRepository } from "../../store/repositories/refresh-tokens.ts";
import type { AccountsService } from "../accounts.ts";
import type { AppSessions } from "./app-sessions.ts";

/** Every refresh token starts with this (never taken for an access token `zat_` or an API key `sk-`). */
export const REFRESH_TOKEN_PREFIX = "zrt_";

// newOpaqueToken makes 4 + 43 characters; anything much longer is not one of ours.
const MAX_REFRESH_TOKEN_LENGTH = 128;

/** What a sign-in gives the client: the pair, their lifetimes, and who signed in. */
export interface SignedIn {
  accessToken: string;
  refreshToken: string;
  accessSeconds: number;
  refreshSeconds: number;
  user: { id: string; email: string; emailVerified: boolean };
}

/**
 * Sign-in of the app API (docs/app-auth.md): email and
 * password for a pair of tokens; a refresh token exchanged once for a new pair; logout revokes a
 * refresh token. Access tokens are signed and not stored; refresh tokens are stored as hashes.
 */
export class SignIn {
  private readonly accounts: AccountsService;
  private readonly sessions: AppSessions;
  private readonly refreshTokens: RefreshTokensRepository;
  private readonly now: () => Date;
  private readonly refreshSeconds: number;
  private readonly log: FastifyBaseLogger | undefined;
  private dummyHash: Promise<string> | undefined;

  constructor(deps: {
    accounts: AccountsService;
    sessions: AppSessions;
    refreshTokens: RefreshTokensRepository;
    now: () => Date;
    refreshSeconds: number;
    log?: FastifyBaseLogger;
  }) {
    this.accounts = deps.accounts;
    this.sessions = deps.sessions;
    this.refreshTokens = deps.refreshTokens;
    this.now = deps.now;
    this.refreshSeconds = deps.refreshSeconds;
    this.log = deps.log;
  }

  /**
   * A new pair for the right email and password of an enabled account; otherwise 401
   * `invalid_credentials`, alike whichever was wrong. A password is checked against a hash in
   * every case (a throwaway one when there is no account to check against), so the time taken does
   * not tell whether an account exists. An unverified account signs in too.
   */
  async login(email: string, password: string): Promise<SignedIn> {
    const found = await this.accounts.findByEmail(email);
    const account = found && found.passwordHash !== null && !found.disabled ? found : undefined;
    const matches = await verifyPassword(password, account?.passwordHash ?? (await this.throwawayHash()));
    if (!account || !matches) throw invalidCredentials();
    await this.refreshTokens.deleteExpired(account.id, this.now());
    return this.issue(account);
  }

  /**
   * Exchanges a refresh token for a new pair and retires it. A retired token sent again revokes
   * every refresh token of the account (RFC 9700 §4.14.2); it, and any token that is unknown,
   * revoked, expired or of a disabled account, is 401 `unauthorized`.
   */
  async refresh(refreshToken: string): Promise<SignedIn> {
    if (!refreshToken.startsWith(REFRESH_TOKEN_PREFIX) || refreshToken.length > MAX_REFRESH_TOKEN_LENGTH) {
      throw unauthorized("The refresh token is invalid, expired or revoked. Sign in again.");
    }
    const now = this.now();
    const next = newOpaqueToken(REFRESH_TOKEN_PREFIX);
    const rotation = await this.refreshTokens.rotate(
      hashOpaqueToken(refreshToken),
      { tokenHash: hashOpaqueToken(next), expiresAt: this.refreshExpiry(now) },
      now,
    );
    if (rotation.outcome === "reused") {
      this.log?.warn(
        { account_id: rotation.accountId },
        "a retired refresh token was used again; all revoked",
      );
      throw unauthorized(
        "This refresh token was used before, so every session of the account was ended. Sign in again.",
      );
    }
    if (rotation.outcome === "refused") {
      throw unauthorized("The refresh token is invalid, expired or revoked. Sign in again.");
    }
    const account = await this.accounts.get(rotation.accountId);
    return this.pair(account, next);
  }

  /** Revokes a refresh token if it is the user's; anything else is left alone, and the answer is the same. */
  async logout(accountId: string, refreshToken: string): Promise<void> {
    if (refreshToken.length > MAX_REFRESH_TOKEN_LENGTH) return;
    await this.refreshTokens.revoke(hashOpaqueToken(refreshToken), accountId, this.now());
  }

  /** A new pair for an account that has just proved who it is (login, registration, password reset). */
  async issue(account: AccountRow): Promise<SignedIn> {
    const now = this.now();
    const refreshToken = newOpaqueToken(REFRESH_TOKEN_PREFIX);
    await this.refreshTokens.insert({
      accountId: account.id,
      tokenHash: hashOpaqueToken(refreshToken),
      expiresAt: this.refreshExpiry(now),
      createdAt: now,
    });
    return this.pair(account, refreshToken);
  }

  private async pair(account: AccountRow, refreshToken: string): Promise<SignedIn> {
    return {
      accessToken: await this.sessions.accessToken(account.id),
      refreshToken,
      accessSeconds: this.sessions.accessSeconds,
      refreshSeconds: this.refreshSeconds,
      user: { id: account.id, email: account.email, emailVerified: account.emailVerified },
    };
  }

  private refreshExpiry(now: Date): Date {
    return new Date(now.getTime() + this.refreshSeconds * 1000);
  }

  private throwawayHash(): Promise<string> {
    this.dummyHash ??= hashPassword(randomBytes(24).toString("base64url"));
    this.dummyHash.catch(() => {
      this.dummyHash = undefined;
    });
    return this.dummyHash;
  }
}
