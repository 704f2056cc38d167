import { MAX_AMOUNT } from "../../billing/money.ts";
import { MAX_REQUESTS_PER_MINUTE } from "../../services/api-keys.ts";
import type { Operator, Page, ServedModel } from "../../services/operator.ts";
import type { AccountRow } from "../../store/repositories/accounts.ts";
import type { ApiKeyRow } from "../../store/repositories/api-keys.ts";
import type { Balance } from "../../store/repositories/credits.ts";
import {
  asFields,
  booleanField,
  dateField,
  type Fields,
  numberField,
  stringField,
  stringListField,
} from "../wire/fields.ts";
import {
  accountView,
  apiKeyView,
  creditBalanceView,
  knowledgeBaseView,
  listView,
  mailView,
  modelView,
  usageRecordView,
  usageSummaryView,
} from "./operator-views.ts";

/**
 * The operator API as the routes and the `zona` command call it: each action takes the fields of a
 * request (a body or a query, as sent), reads them into the Operator's arguments (every error a
 * 400 naming its field, in the order the fields are read) and draws what the Operator returns in
 * the operator API's shapes (operator-views.ts).
 */
export type OperatorApi = ReturnType<typeof operatorApi>;

/** The operator API over an Operator. */
export function operatorApi(operator: Operator) {
  const account = async (row: Promise<AccountRow>) => accountView(await row);
  const key = async (row: Promise<ApiKeyRow>) => apiKeyView(await row, operator.now());
  const keys = (rows: ApiKeyRow[]) => {
    const now = operator.now();
    return listView(rows.map((row) => apiKeyView(row, now)));
  };
  const credits = async (accountId: string, balance: Promise<Balance>) =>
    creditBalanceView(accountId, await balance, operator.currency);
  const model = (served: ServedModel) => modelView(served.model, served.machines, served.activated);
  return {
    createAccount: async (body: unknown) => {
      const fields = asFields(body);
      const password = stringField(fields, "password");
      const language = stringField(fields, "language");
      const emailVerified = booleanField(fields, "email_verified");
      return account(
        operator.createAccount({
          email: stringField(fields, "email", { required: true, max: 254 }) ?? "",
          ...(password !== undefined ? { password } : {}),
          ...(language !== undefined ? { language } : {}),
          ...(emailVerified !== undefined ? { emailVerified } : {}),
        }),
      );
    },
    listAccounts: async (query: unknown) => {
      const fields = asFields(query);
      const email = stringField(fields, "email");
      const rows = await operator.listAccounts(email !== undefined ? { email } : { page: page(fields) });
      return listView(rows.map(accountView));
    },
    getAccount: async (id: string) => account(operator.getAccount(id)),
    setAccountDisabled: async (id: string, disabled: boolean) =>
      account(operator.setAccountDisabled(id, disabled)),
    verifyEmail: async (id: string) => account(operator.verifyEmail(id)),
    createKey: async (accountId: string, body: unknown) => {
      const fields = asFields(body);
      const zones = stringListField(fields, "zones", { maxItems: 100 });
      const monthlyLimit = numberField(fields, "monthly_limit", { min: 0, max: MAX_AMOUNT });
      const requestsPerMinute = requestsPerMinuteField(fields);
      const expiresAt = dateField(fields, "expires_at");
      const { row, secret } = await operator.createKey(accountId, {
        name: stringField(fields, "name", { required: true, max: 100 }) ?? "",
        ...(zones !== undefined ? { zones } : {}),
        ...(monthlyLimit !== undefined ? { monthlyLimit } : {}),
        ...(typeof requestsPerMinute === "number" ? { requestsPerMinute } : {}),
        ...(expiresAt !== undefined ? { expiresAt } : {}),
      });
      return { ...apiKeyView(row, operator.now()), key: secret };
    },
    /** Changes the fields given of a key; null clears one (zones, monthly_limit, requests_per_minute, expires_at). */
    updateKey: async (id: string, body: unknown) => key(operator.updateKey(id, keyChanges(asFields(body)))),
    listKeys: async (query: unknown) => {
      const accountId = stringField(asFields(query), "account_id");
      return keys(await operator.listKeys(accountId === undefined ? {} : { accountId }));
    },
    getKey: async (id: string) => key(operator.getKey(id)),
    revokeKey: async (id: string) => key(operator.revokeKey(id)),
    getCredits: async (accountId: string) => credits(accountId, operator.getCredits(accountId)),
    setCredits: async (accountId: string, body: unknown) => {
      const fields = asFields(body);
      const balance = numberField(fields, "balance", { required: true, min: 0, max: MAX_AMOUNT }) ?? 0;
      return credits(accountId, operator.setCredits(accountId, balance, note(fields)));
    },
    addCredits: async (accountId: string, body: unknown) => {
      const fields = asFields(body);
      const amount =
        numberField(fields, "amount", { required: true, min: -MAX_AMOUNT, max: MAX_AMOUNT }) ?? 0;
      return credits(accountId, operator.addCredits(accountId, amount, note(fields)));
    },
    listModels: async () => listView((await operator.listModels()).map(model)),
    setModelActive: async (modelId: string, active: boolean) => {
      const served = await operator.setModelActive(modelId, active);
      return served && model(served);
    },
    listKnowledgeBases: async () => listView((await operator.listKnowledgeBases()).map(knowledgeBaseView)),
    setKnowledgeBaseShared: async (slug: string, shared: boolean) =>
      knowledgeBaseView(await operator.setKnowledgeBaseShared(slug, shared)),
    listUsage: async (query: unknown) => {
      const fields = asFields(query);
      return listView((await operator.listUsage(usageFilter(fields), page(fields))).map(usageRecordView));
    },
    usageSummary: async (query: unknown) =>
      usageSummaryView(await operator.usageSummary(usageFilter(asFields(query))), operator.currency),
    /** `GET /admin/v1/mail?pending=true&limit=&offset=`: newest first; `pending` keeps the mails no server took. */
    listMail: async (query: unknown) => {
      const fields = asFields(query);
      const rows = await operator.listMail({
        pending: booleanField(fields, "pending") ?? false,
        limit: numberField(fields, "limit", { min: 1, max: 1000, integer: true }) ?? 100,
        offset: numberField(fields, "offset", { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }) ?? 0,
      });
      return listView(rows.map(mailView));
    },
  };
}

function keyChanges(fields: Fields) {
  const changes: Parameters<Operator["updateKey"]>[1] = {};
  const name = stringField(fields, "name", { max: 100 });
  if (name !== undefined) changes.name = name;
  const zones = orNull(fields, "zones", () => stringListField(fields, "zones", { maxItems: 100 }));
  if (zones !== undefined) changes.zones = zones;
  const monthlyLimit = orNull(fields, "monthly_limit", () =>
    numberField(fields, "monthly_limit", { min: 0, max: MAX_AMOUNT }),
  );
  if (monthlyLimit !== undefined) changes.monthlyLimit = monthlyLimit;
  const requestsPerMinute = requestsPerMinuteField(fields);
  if (requestsPerMinute !== undefined) changes.requestsPerMinute = requestsPerMinute;
  const expiresAt = orNull(fields, "expires_at", () => dateField(fields, "expires_at"));
  if (expiresAt !== undefined) changes.expiresAt = expiresAt;
  return changes;
}

/** `requests_per_minute`: a whole number from 1, or null for the tier table's limit. */
function requestsPerMinuteField(fields: Fields): number | null | undefined {
  return orNull(fields, "requests_per_minute", () =>
    numberField(fields, "requests_per_minute", { min: 1, max: MAX_REQUESTS_PER_MINUTE, integer: true }),
  );
}

/** A field that may be set to null (which clears it), else read by `read`. */
function orNull<T>(fields: Fields, name: string, read: () => T | undefined): T | null | undefined {
  return fields[name] === null ? null : read();
}

function usageFilter(fields: Fields) {
  const accountId = stringField(fields, "account_id");
  const keyId = stringField(fields, "key_id");
  const month = stringField(fields, "month");
  return {
    ...(accountId !== undefined ? { accountId } : {}),
    ...(keyId !== undefined ? { keyId } : {}),
    ...(month !== undefined ? { month } : {}),
  };
}

function page(fields: Fields): Page {
  return {
    limit: numberField(fields, "limit", { min: 1, max: 1000, integer: true }) ?? 100,
    offset: numberField(fields, "offset", { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }) ?? 0,
  };
}

function note(fields: Fields): string | null {
  return stringField(fields, "note", { max: 500 }) ?? null;
}
