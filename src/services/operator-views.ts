import { fromMicros } from "../billing/money.ts";
import type { AccountRow } from "../store/repositories/accounts.ts";
import type { ApiKeyRow } from "../store/repositories/api-keys.ts";

/** An account as the operator API shows it. */
export function accountView(row: AccountRow) {
  return {
    id: row.id,
    object: "account" as const,
    email: row.email,
    email_verified: row.emailVerified,
    disabled: row.disabled,
    language: row.language,
    has_password: row.passwordHash !== null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** An API key as the operator API shows it: never the secret, never its hash. */
export function apiKeyView(row: ApiKeyRow, now: Date) {
  const status = row.revokedAt
    ? "revoked"
    : row.expiresAt && row.expiresAt.getTime() <= now.getTime()
      ? "expired"
      : "active";
  return {
    id: row.id,
    object: "api_key" as const,
    account_id: row.accountId,
    name: row.name,
    display_prefix: row.displayPrefix,
    zones: row.zones,
    monthly_limit: row.monthlyLimitMicros === null ? null : fromMicros(row.monthlyLimitMicros),
    expires_at: row.expiresAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
    status,
    created_at: row.createdAt.toISOString(),
  };
}

/** An account's prepaid balance. */
export function creditBalanceView(accountId: string, balanceMicros: number, currency: string) {
  return {
    object: "credit_balance" as const,
    account_id: accountId,
    balance: fromMicros(balanceMicros),
    currency,
  };
}

/** A list of items in the shape the APIs use. */
export function listView<T>(data: T[]) {
  return { object: "list" as const, data };
}
