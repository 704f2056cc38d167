import type { Config } from "../config/schema.ts";
import type { EngineRegistry } from "../engines/registry.ts";
import { itemNotFound } from "../errors/catalogue.ts";
import { type MailQuery, mailView } from "../mail/mail-view.ts";
import type { KnowledgeBasesRepository } from "../store/repositories/knowledge-bases.ts";
import type { MailOutboxRepository } from "../store/repositories/mail-outbox.ts";
import type { UsageFilter } from "../store/repositories/usage.ts";
import type { AccountsService, NewAccount } from "./accounts.ts";
import type { ApiKeyChanges, ApiKeysService, NewApiKey } from "./api-keys.ts";
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

/** Which page of a list: at most `limit` items after the first `offset`. */
export interface Page {
  limit: number;
  offset: number;
}

/**
 * What an operator can do, returning what the operator API answers. Its wire face
 * (`routes/admin/operator-api.ts`) reads the fields of a request into its arguments; the HTTP routes
 * and the `zona` command (when it opens the database itself) share that face, so both validate and
 * answer alike.
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

  async createAccount(input: NewAccount) {
    return accountView(await this.accounts.create(input));
  }

  /** The account of an email address (a list of one, or none), or a page of every account. */
  async listAccounts(query: { email: string } | { page: Page }) {
    if ("email" in query) {
      const row = await this.accounts.findByEmail(query.email);
      return listView(row ? [accountView(row)] : []);
    }
    const rows = await this.accounts.list(query.page);
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

  async createKey(accountId: string, input: NewApiKey) {
    const { row, secret } = await this.keys.create(accountId, input);
    return { ...apiKeyView(row, this.now()), key: secret };
  }

  /** Changes the fields given of a key; null clears one (zones, monthly limit, requests per minute, expiry). */
  async updateKey(id: string, changes: ApiKeyChanges) {
    return apiKeyView(await this.keys.update(id, changes), this.now());
  }

  async listKeys(filter: { accountId?: string }) {
    const rows = await this.keys.list(filter);
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

  async setCredits(accountId: string, balance: number, note: string | null) {
    const next = await this.credits.set(accountId, balance, note);
    return creditBalanceView(accountId, next, this.currency);
  }

  async addCredits(accountId: string, amount: number, note: string | null) {
    const next = await this.credits.add(accountId, amount, note);
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
  async listUsage(filter: UsageFilter, page: Page) {
    const rows = await this.usage.list(filter, page);
    return listView(rows.map(usageRecordView));
  }

  /** What an account or a key used and spent in a month (the current one by default). */
  async usageSummary(filter: UsageFilter) {
    const summary = await this.usage.summary(filter);
    return usageSummaryView(summary, this.currency);
  }

  /** The mail the service wrote, newest first; `pending` keeps what no SMTP server took (the outbox). */
  async listMail(query: MailQuery) {
    const rows = await this.mailOutbox.list(query);
    return listView(rows.map(mailView));
  }
}
