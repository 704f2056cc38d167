import type { FastifyBaseLogger } from "fastify";
import { hashOpaqueToken, newOpaqueToken } from "../../auth/opaque-tokens.ts";
import { hashPassword } from "../../auth/passwords.ts";
import { type ApiError, tooManyAttempts, validationFailed } from "../../errors/catalogue.ts";
import { mailLink, passwordResetMail, verificationMail } from "../../mail/mail-texts.ts";
import type { Mailer } from "../../mail/mailer.ts";
import type { AccountRow } from "../../store/repositories/accounts.ts";
import type { EmailTokenPurpose, EmailTokensRepository } from "../../store/repositories/email-tokens.ts";
import type { AccountsService } from "../accounts.ts";
import type { AppSessions } from "./app-sessions.ts";
import { BackgroundWork } from "./background-work.ts";
import type { SignedIn, SignIn } from "./sign-in.ts";

/** Lifetimes and prefixes of the tokens sent by mail. */
export const EMAIL_TOKENS = {
  verify_email: { prefix: "zev_", seconds: 7 * 24 * 3600 },
  reset_password: { prefix: "zpr_", seconds: 3600 },
} as const satisfies Record<EmailTokenPurpose, { prefix: string; seconds: number }>;

/** At most one mail of each kind per account in this time, so nobody can flood an address. */
export const MAIL_INTERVAL_SECONDS = 60;

const MAX_MAILED_TOKEN_LENGTH = 128;

/** The user as the verification answers show it. */
export interface VerifiedUser {
  id: string;
  email: string;
  emailVerified: boolean;
}

/**
 * The parts of the app API's sign-in that go through mail: registration and email verification,
 * password reset. Tokens in mails are opaque, stored as hashes, expire, and work once. Mail is sent
 * in the background: a mail server that fails or is slow never fails or slows the request.
 */
export class AccountMails {
  private readonly accounts: AccountsService;
  private readonly tokens: EmailTokensRepository;
  private readonly signIn: SignIn;
  private readonly sessions: AppSessions;
  private readonly mailer: Mailer;
  private readonly publicUrl: () => string;
  private readonly now: () => Date;
  private readonly background: BackgroundWork;

  constructor(deps: {
    accounts: AccountsService;
    tokens: EmailTokensRepository;
    signIn: SignIn;
    sessions: AppSessions;
    mailer: Mailer;
    /** Where mail links point, read when a mail is made. */
    publicUrl: () => string;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    this.accounts = deps.accounts;
    this.tokens = deps.tokens;
    this.signIn = deps.signIn;
    this.sessions = deps.sessions;
    this.mailer = deps.mailer;
    this.publicUrl = deps.publicUrl;
    this.now = deps.now;
    this.background = new BackgroundWork(deps.log);
  }

  /** Opens an account, signs it in, and sends the verification mail. */
  async register(input: { email: string; password: string; language?: string }): Promise<SignedIn> {
    const account = await this.accounts.create({
      email: input.email,
      password: input.password,
      ...(input.language !== undefined ? { language: input.language } : {}),
    });
    await this.sendVerification(account);
    return this.signIn.issue(account);
  }

  /**
   * Marks the email of the token's account verified. A token already used on an account that is
   * verified answers the same (a second click on the link); any other token is 422 on `token`.
   */
  async verifyEmail(token: string): Promise<VerifiedUser> {
    const hash = hashOpaqueToken(token.slice(0, MAX_MAILED_TOKEN_LENGTH + 1));
    const accountId = await this.tokens.verifyEmail(hash, this.now());
    if (accountId !== undefined) {
      this.sessions.forget(accountId);
      return userOf(await this.accounts.get(accountId));
    }
    const row = await this.tokens.findByHash(hash);
    if (row?.purpose === "verify_email" && row.usedAt !== null) {
      const account = await this.accounts.get(row.accountId);
      if (account.emailVerified) return userOf(account);
    }
    throw invalidToken();
  }

  /**
   * Sends a new verification mail to a signed-in user whose email is not verified yet; true when
   * one was sent, false when the email is verified already. One mail a minute, else 429.
   */
  async resendVerification(accountId: string): Promise<boolean> {
    const account = await this.accounts.get(accountId);
    if (account.emailVerified) return false;
    // The token is issued only if none was within the minute, in one step with the check.
    if (!(await this.sendVerification(account))) {
      throw tooManyAttempts({
        "Retry-After": String(Math.max(1, await this.secondsToWait(account.id, "verify_email"))),
      });
    }
    return true;
  }

  /**
   * Sends a reset link if an enabled account has this email. Everything happens after the answer,
   * so neither the answer nor its timing tells whether the account exists.
   */
  forgotPassword(email: string): void {
    this.background.run("password reset mail", async () => {
      const account = await this.accounts.findByEmail(email);
      if (!account || account.disabled) return;
      const token = await this.issueToken(account, "reset_password");
      if (token === undefined) return; // one was sent within the minute
      const mail = passwordResetMail(account.language, mailLink(this.publicUrl(), "reset-password", token));
      await this.mailer.send({ to: account.email, ...mail });
    });
  }

  /**
   * Sets a new password with a reset token, which works once and for an hour; the email counts
   * as verified (the mail reached its owner) and every refresh token of the account is revoked.
   * Signs the account in; a token that does not work is 422 on `token`.
   */
  async resetPassword(token: string, password: string): Promise<SignedIn> {
    const hash = hashOpaqueToken(token.slice(0, MAX_MAILED_TOKEN_LENGTH + 1));
    const row = await this.tokens.findByHash(hash);
    // Checked before hashing the password, so a wrong token costs no hashing.
    if (row?.purpose !== "reset_password" || row.usedAt !== null || row.expiresAt <= this.now()) {
      throw invalidToken();
    }
    const passwordHash = await hashPassword(password);
    const accountId = await this.tokens.resetPassword(hash, passwordHash, this.now());
    if (accountId === undefined) throw invalidToken();
    this.sessions.forget(accountId);
    return this.signIn.issue(await this.accounts.get(accountId));
  }

  /** Waits for the mail being sent (tests, shutdown), then lets the mail server go. */
  async close(): Promise<void> {
    await this.background.drain();
    await this.mailer.close();
  }

  /** Resolves once every mail started has been written (and, with SMTP, sent or failed). */
  settled(): Promise<void> {
    return this.background.drain();
  }

  /** Sends a verification mail, unless one was issued within the minute (false then). */
  private async sendVerification(account: AccountRow): Promise<boolean> {
    const token = await this.issueToken(account, "verify_email");
    if (token === undefined) return false;
    const mail = verificationMail(account.language, mailLink(this.publicUrl(), "verify-email", token));
    this.background.run("verification mail", () => this.mailer.send({ to: account.email, ...mail }));
    return true;
  }

  /** A new token of the purpose, or undefined when one was issued within the minute (one mail a minute). */
  private async issueToken(account: AccountRow, purpose: EmailTokenPurpose): Promise<string | undefined> {
    const now = this.now();
    const { prefix, seconds } = EMAIL_TOKENS[purpose];
    const token = newOpaqueToken(prefix);
    await this.tokens.deleteExpired(account.id, now);
    const issued = await this.tokens.insertUnlessIssuedAfter(
      {
        accountId: account.id,
        purpose,
        tokenHash: hashOpaqueToken(token),
        expiresAt: new Date(now.getTime() + seconds * 1000),
        createdAt: now,
      },
      new Date(now.getTime() - MAIL_INTERVAL_SECONDS * 1000),
    );
    return issued ? token : undefined;
  }

  private async secondsToWait(accountId: string, purpose: EmailTokenPurpose): Promise<number> {
    const last = await this.tokens.lastIssued(accountId, purpose);
    if (!last) return 0;
    const elapsed = (this.now().getTime() - last.getTime()) / 1000;
    return elapsed >= MAIL_INTERVAL_SECONDS ? 0 : Math.ceil(MAIL_INTERVAL_SECONDS - elapsed);
  }
}

function userOf(account: AccountRow): VerifiedUser {
  return { id: account.id, email: account.email, emailVerified: account.emailVerified };
}

function invalidToken(): ApiError {
  return validationFailed({
    token: ["This link is invalid, has expired or was used already. Ask for a new one."],
  });
}
