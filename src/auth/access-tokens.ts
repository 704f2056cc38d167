import { createHmac, timingSafeEqual } from "node:crypto";

/** What an access token of the app API says. */
export interface AccessClaims {
  /** The account id. */
  sub: string;
  /** Issued and expiry times, Unix seconds. */
  iat: number;
  exp: number;
  /** The account's password stamp at issue (see `passwordStamp`): a new password ends older tokens. */
  pwd?: string;
}

/** Every access token starts with this, so it is never taken for an API key (`sk-`). */
export const ACCESS_TOKEN_PREFIX = "zat_";

/**
 * Access tokens of the app API: signed, not stored (logout revokes the refresh token only; the
 * access token works until it expires). `zat_` + base64url(JSON claims) + `.` + base64url(HMAC-SHA256).
 */
export class AccessTokens {
  private readonly secret: Buffer;
  constructor(secret: Buffer) {
    this.secret = secret;
  }

  sign(accountId: string, now: Date, lifetimeSeconds: number, passwordStamp?: string): string {
    const iat = Math.floor(now.getTime() / 1000);
    const claims: AccessClaims = {
      sub: accountId,
      iat,
      exp: iat + lifetimeSeconds,
      ...(passwordStamp === undefined ? {} : { pwd: passwordStamp }),
    };
    const body = Buffer.from(JSON.stringify(claims)).toString("base64url");
    return `${ACCESS_TOKEN_PREFIX}${body}.${this.mac(body)}`;
  }

  /** The claims of a valid, unexpired token; undefined for anything else. */
  verify(token: string, now: Date): AccessClaims | undefined {
    if (!token.startsWith(ACCESS_TOKEN_PREFIX)) return undefined;
    const [body, mac, ...rest] = token.slice(ACCESS_TOKEN_PREFIX.length).split(".");
    if (!body || !mac || rest.length > 0) return undefined;
    const expected = Buffer.from(this.mac(body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
    } catch {
      return undefined;
    }
    if (!isClaims(claims) || claims.exp <= now.getTime() / 1000) return undefined;
    return claims;
  }

  /**
   * A short keyed digest of an account's password hash (salted, so every new password gives a new
   * one), carried in its tokens: a token issued before a password reset no longer matches.
   */
  passwordStamp(passwordHash: string | null): string {
    return this.mac(`password\n${passwordHash ?? ""}`).slice(0, 22);
  }

  private mac(body: string): string {
    return createHmac("sha256", this.secret).update(body).digest("base64url");
  }
}

function isClaims(value: unknown): value is AccessClaims {
  if (typeof value !== "object" || value === null) return false;
  const claims = value as Record<string, unknown>;
  return (
    typeof claims.sub === "string" &&
    typeof claims.iat === "number" &&
    typeof claims.exp === "number" &&
    (claims.pwd === undefined || typeof claims.pwd === "string")
  );
}
