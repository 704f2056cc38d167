/**
 * The operator API's wire shapes: how the operator API (and the `zona` command, which prints what
 * it answers) shows the accounts, keys, balances, usage, models, knowledge bases and mails that the
 * Operator service returns.
 */
import { fromMicros } from "../../billing/money.ts";
import type { ModelConfig } from "../../config/schema.ts";
import type { UsageSummary } from "../../services/usage.ts";
import type { AccountRow } from "../../store/repositories/accounts.ts";
import type { ApiKeyRow } from "../../store/repositories/api-keys.ts";
import type { UsageRow } from "../../store/repositories/billing.ts";
import type { Balance } from "../../store/repositories/credits.ts";
import type { KnowledgeBaseRow } from "../../store/repositories/knowledge-bases.ts";
import type { MailRow } from "../../store/repositories/mail-outbox.ts";

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
    requests_per_minute: row.requestsPerMinute,
    expires_at: row.expiresAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
    status,
    created_at: row.createdAt.toISOString(),
  };
}

/** An account's prepaid balance; `held` is the part that requests in flight may still spend. */
export function creditBalanceView(accountId: string, balance: Balance, currency: string) {
  return {
    object: "credit_balance" as const,
    account_id: accountId,
    balance: fromMicros(balance.balanceMicros),
    held: fromMicros(balance.heldMicros),
    currency,
  };
}

/** A list of items in the shape the APIs use. */
export function listView<T>(data: T[]) {
  return { object: "list" as const, data };
}

/** One usage record as the operator API shows it. */
export function usageRecordView(row: UsageRow) {
  return {
    object: "usage_record" as const,
    request_id: row.requestId,
    key_id: row.keyId,
    account_id: row.accountId,
    month: row.month,
    endpoint: row.endpoint,
    model: row.model,
    units: row.units,
    cost: fromMicros(row.costMicros),
    zone: row.zone,
    machine: row.machine,
    outcome: row.outcome,
    duration_ms: row.durationMs,
    created_at: row.createdAt.toISOString(),
  };
}

/** A month's usage of an account or a key. */
export function usageSummaryView(summary: UsageSummary, currency: string) {
  return {
    object: "usage_summary" as const,
    month: summary.month,
    account_id: summary.accountId,
    key_id: summary.keyId,
    currency,
    requests: summary.groups.reduce((sum, group) => sum + group.requests, 0),
    cost: fromMicros(summary.groups.reduce((sum, group) => sum + group.costMicros, 0)),
    by_endpoint: summary.groups.map((group) => ({
      endpoint: group.endpoint,
      model: group.model,
      requests: group.requests,
      cost: fromMicros(group.costMicros),
    })),
    key_spend: summary.keySpend && {
      spent: fromMicros(summary.keySpend.spentMicros),
      reserved: fromMicros(summary.keySpend.reservedMicros),
      monthly_limit:
        summary.keySpend.monthlyLimitMicros === null ? null : fromMicros(summary.keySpend.monthlyLimitMicros),
    },
  };
}

/** A catalogue model as the operator API shows it. */
export function modelView(model: ModelConfig, machines: string[], activated: boolean) {
  return {
    object: "model" as const,
    id: model.id,
    kind: model.kind,
    vision: model.vision,
    local_server: model.local_server,
    on_request: model.on_request,
    /** Whether requests go through now: always for models not served on request. */
    active: !model.on_request || activated,
    machines,
    prices: model.prices,
  };
}

/** A knowledge base as the operator sees it. */
export function knowledgeBaseView(row: KnowledgeBaseRow) {
  return {
    id: row.id,
    object: "knowledge_base",
    slug: row.slug,
    name: row.name,
    description: row.description,
    account_id: row.accountId,
    shared: row.shared,
    documents: Number(row.documents),
    ready_documents: Number(row.readyDocuments),
    created_at: row.createdAt.toISOString(),
  };
}

/** A mail of the outbox as the operator API shows it (the body holds the link the user needs). */
export function mailView(row: MailRow) {
  return {
    id: row.id,
    object: "mail" as const,
    to: row.recipient,
    subject: row.subject,
    body: row.body,
    /** `sent`: an SMTP server took it; `failed`: it refused or did not answer; `pending`: waiting in the outbox. */
    status: row.sentAt ? "sent" : row.lastError ? "failed" : "pending",
    sent_at: row.sentAt?.toISOString() ?? null,
    last_error: row.lastError,
    created_at: row.createdAt.toISOString(),
  };
}
