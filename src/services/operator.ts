import { MAX_AMOUNT } from "../billing/money.ts";
import type { Config } from "../config/schema.ts";
import type { EngineRegistry } from "../engines/registry.ts";
import { itemNotFound } from "../errors/catalogue.ts";
import {
  asFields,
  booleanField,
  dateField,
  type Fields,
  numberField,
  stringField,
  stringListField,
} from "../http/fields.ts";
import { listOutbox } from "../mail/outbox-list.ts";
import type { KnowledgeBasesRepository } from "../store/repositories/knowledge-bases.ts";
import type { MailOutboxRepository } from "../store/repositories/mail-outbox.ts";
import type { AccountsService } from "./accounts.ts";
import { type ApiKeyChanges, type ApiKeysService, MAX_REQUESTS_PER_MINUTE } from "./api-keys.ts";
import type { CreditsService } from "./credits.ts";
import { isKbSlug } from "./knowledge/kb-slug.ts";
import type { ModelActivations } from "./model-activations.ts";
import {
  accountView,
  apiKeyView,
  creditBalanceView,
  knowledgeBaseView,
  listView,
  modelView,
  usageRecordView,
  usageSummaryView,
} from "./operator-views.ts";
import type { UsageService } from "./usage.ts";

/**
 * What an operator can do, taking the fields of a request and returning what the operator API
 * answers. The HTTP routes and the `zona` command (when it opens the database itself) share it,
 * so both validate and answer alike.
 */
export class Operator {
  private readonly accounts: AccountsService;
  private readonly keys: ApiKeysService;
  private readonly credits: CreditsService;
  private readonly usage: UsageService;
  private readonly mailOutbox: MailOutboxRepository;
  private readonly knowledgeBases: KnowledgeBasesRepository;
  /** The models of the configuration in force (a reload replaces them). */
  private readonly models: () => { config: Config; engines: EngineRegistry; activations: ModelActivations };
  private readonly currency: string;
  private readonly now: () => Date;

  constructor(deps: {
    accounts: AccountsService;
    keys: ApiKeysService;
    credits: CreditsService;
    usage: UsageService;
    mailOutbox: MailOutboxRepository;
    knowledgeBases: KnowledgeBasesRepository;
    models: () => { config: Config; engines: EngineRegistry; activations: ModelActivations };
    currency: string;
    now?: () => Date;
  }) {
    this.accounts = deps.accounts;
    this.keys = deps.keys;
    this.credits = deps.credits;
    this.usage = deps.usage;
    this.mailOutbox = deps.mailOutbox;
    this.knowledgeBases = deps.knowledgeBases;
    this.models = deps.models;
    this.currency = deps.currency;
    this.now = deps.now ?? (() => new Date());
  }

  async createAccount(body: unknown) {
    const fields = asFields(body);
    const password = stringField(fields, "password");
    const language = stringField(fields, "language");
    const emailVerified = booleanField(fields, "email_verified");
    const row = await this.accounts.create({
      email: stringField(fields, "email", { required: true, max: 254 }) ?? "",
      ...(password !== undefined ? { password } : {}),
      ...(language !== undefined ? { language } : {}),
      ...(emailVerified !== undefined ? { emailVerified } : {}),
    });
    return accountView(row);
  }

  async listAccounts(query: unknown) {
    const fields = asFields(query);
    const email = stringField(fields, "email");
    if (email !== undefined) {
      const row = await this.accounts.findByEmail(email);
      return listView(row ? [accountView(row)] : []);
    }
    const rows = await this.accounts.list(page(fields));
    return listView(rows.map(accountView));
  }

  async getAccount(id: string) {
    return accountView(await this.accounts.get(id));
  }

  async setAccountDisabled(id: string, disabled: boolean) {
    return accountView(await this.accounts.setDisabled(id, disabled));
  }

  async verifyEmail(id: string) {
    return accountView(await this.accounts.markEmailVerified(id));
  }

  async createKey(accountId: string, body: unknown) {
    const fields = asFields(body);
    const zones = stringListField(fields, "zones", { maxItems: 100 });
    const monthlyLimit = numberField(fields, "monthly_limit", { min: 0, max: MAX_AMOUNT });
    const requestsPerMinute = requestsPerMinuteField(fields);
    const expiresAt = dateField(fields, "expires_at");
    const { row, secret } = await this.keys.create(accountId, {
      name: stringField(fields, "name", { required: true, max: 100 }) ?? "",
      ...(zones !== undefined ? { zones } : {}),
      ...(monthlyLimit !== undefined ? { monthlyLimit } : {}),
      ...(typeof requestsPerMinute === "number" ? { requestsPerMinute } : {}),
      ...(expiresAt !== undefined ? { expiresAt } : {}),
    });
    return { ...apiKeyView(row, this.now()), key: secret };
  }

  /** Changes the fields given of a key; null clears one (zones, monthly_limit, requests_per_minute, expires_at). */
  async updateKey(id: string, body: unknown) {
    const fields = asFields(body);
    const changes: ApiKeyChanges = {};
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
    return apiKeyView(await this.keys.update(id, changes), this.now());
  }

  async listKeys(query: unknown) {
    const fields = asFields(query);
    const accountId = stringField(fields, "account_id");
    const rows = await this.keys.list(accountId === undefined ? {} : { accountId });
    const now = this.now();
    return listView(rows.map((row) => apiKeyView(row, now)));
  }

  async getKey(id: string) {
    return apiKeyView(await this.keys.get(id), this.now());
  }

  async revokeKey(id: string) {
    return apiKeyView(await this.keys.revoke(id), this.now());
  }

  async getCredits(accountId: string) {
    return creditBalanceView(accountId, await this.credits.balance(accountId), this.currency);
  }

  async setCredits(accountId: string, body: unknown) {
    const fields = asFields(body);
    const balance = numberField(fields, "balance", { required: true, min: 0, max: MAX_AMOUNT }) ?? 0;
    const next = await this.credits.set(accountId, balance, note(fields));
    return creditBalanceView(accountId, next, this.currency);
  }

  async addCredits(accountId: string, body: unknown) {
    const fields = asFields(body);
    const amount = numberField(fields, "amount", { required: true, min: -MAX_AMOUNT, max: MAX_AMOUNT }) ?? 0;
    const next = await this.credits.add(accountId, amount, note(fields));
    return creditBalanceView(accountId, next, this.currency);
  }

  /** The catalogue with the machines serving each model and, for on-request models, whether they are active. */
  async listModels() {
    const { config, engines, activations } = this.models();
    const active = await activations.active();
    return listView(
      config.models.map((model) =>
        modelView(
          model,
          engines.serving(model.id).map((m) => m.config.name),
          active.has(model.id),
        ),
      ),
    );
  }

  /** Activates (or deactivates) a model served on request. */
  async setModelActive(modelId: string, active: boolean) {
    await this.models().activations.setActive(modelId, active);
    return (await this.listModels()).data.find((model) => model.id === modelId);
  }

  /** Every knowledge base of the installation, by slug, with its owner and documents. */
  async listKnowledgeBases() {
    return listView((await this.knowledgeBases.all()).map(knowledgeBaseView));
  }

  /** Shares a base with every key (listed and asked by all) or takes it back to its account alone. */
  async setKnowledgeBaseShared(slug: string, shared: boolean) {
    const base = isKbSlug(slug) ? await this.knowledgeBases.bySlug(slug) : undefined;
    if (!base) throw itemNotFound(`No knowledge base '${slug.slice(0, 64)}'.`);
    await this.knowledgeBases.setShared(base.id, shared);
    const changed = await this.knowledgeBases.byId(base.id);
    if (!changed) throw itemNotFound(`No knowledge base '${slug.slice(0, 64)}'.`);
    return knowledgeBaseView(changed);
  }

  /** Usage records, newest first, of an account, a key, a month, or all. */
  async listUsage(query: unknown) {
    const fields = asFields(query);
    const rows = await this.usage.list(usageFilter(fields), page(fields));
    return listView(rows.map(usageRecordView));
  }

  /** What an account or a key used and spent in a month (the current one by default). */
  async usageSummary(query: unknown) {
    const summary = await this.usage.summary(usageFilter(asFields(query)));
    return usageSummaryView(summary, this.currency);
  }

  /** The mail the service wrote, newest first; `pending` keeps what no SMTP server took (the outbox). */
  async listMail(query: unknown) {
    return listOutbox(this.mailOutbox, query);
  }
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

function page(fields: Fields): { limit: number; offset: number } {
  return {
    limit: numberField(fields, "limit", { min: 1, max: 1000, integer: true }) ?? 100,
    offset: numberField(fields, "offset", { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }) ?? 0,
  };
}

function note(fields: Fields): string | null {
  return stringField(fields, "note", { max: 500 }) ?? null;
}
