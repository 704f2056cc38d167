import type { Config, ModelConfig } from "../config/schema.ts";
import type { EngineRegistry } from "../engines/registry.ts";
import { itemNotFound } from "../errors/catalogue.ts";
import type { KnowledgeBasesRepository } from "../store/repositories/knowledge-bases.ts";
import type { MailOutboxRepository } from "../store/repositories/mail-outbox.ts";
import type { UsageFilter } from "../store/repositories/usage.ts";
import type { AccountsService, NewAccount } from "./accounts.ts";
import type { ApiKeyChanges, ApiKeysService, NewApiKey } from "./api-keys.ts";
import type { CreditsService } from "./credits.ts";
import { isKbSlug } from "./knowledge/kb-slug.ts";
import type { ModelActivations } from "./model-activations.ts";
import type { UsageService } from "./usage.ts";

/** Which page of a list: at most `limit` items after the first `offset`. */
export interface Page {
  limit: number;
  offset: number;
}

/** Which mails to list: `pending` keeps the ones no server took; newest first. */
export interface MailQuery extends Page {
  pending: boolean;
}

/** A catalogue model, the machines serving it and, for a model served on request, whether it is active. */
export interface ServedModel {
  model: ModelConfig;
  machines: string[];
  activated: boolean;
}

/**
 * What an operator can do: accounts, keys, credits, usage, models, knowledge bases and mail, as the
 * store's rows. Its wire face (`routes/admin/operator-api.ts`) reads the fields of a request into
 * its arguments and draws what it returns in the operator API's shapes; the HTTP routes and the
 * `zona` command (when it opens the database itself) share that face, so both validate and answer
 * alike.
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
  /** The installation's currency, in which balances and costs are counted. */
  readonly currency: string;
  /** The clock that tells whether a key has expired. */
  readonly now: () => Date;

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
    return this.accounts.create(input);
  }

  /** The account of an email address (a list of one, or none), or a page of every account. */
  async listAccounts(query: { email: string } | { page: Page }) {
    if ("email" in query) {
      const row = await this.accounts.findByEmail(query.email);
      return row ? [row] : [];
    }
    return this.accounts.list(query.page);
  }

  async getAccount(id: string) {
    return this.accounts.get(id);
  }

  async setAccountDisabled(id: string, disabled: boolean) {
    return this.accounts.setDisabled(id, disabled);
  }

  async verifyEmail(id: string) {
    return this.accounts.markEmailVerified(id);
  }

  /** A new key and its secret, which is shown this once. */
  async createKey(accountId: string, input: NewApiKey) {
    return this.keys.create(accountId, input);
  }

  /** Changes the fields given of a key; null clears one (zones, monthly limit, requests per minute, expiry). */
  async updateKey(id: string, changes: ApiKeyChanges) {
    return this.keys.update(id, changes);
  }

  async listKeys(filter: { accountId?: string }) {
    return this.keys.list(filter);
  }

  async getKey(id: string) {
    return this.keys.get(id);
  }

  async revokeKey(id: string) {
    return this.keys.revoke(id);
  }

  async getCredits(accountId: string) {
    return this.credits.balance(accountId);
  }

  async setCredits(accountId: string, balance: number, note: string | null) {
    return this.credits.set(accountId, balance, note);
  }

  async addCredits(accountId: string, amount: number, note: string | null) {
    return this.credits.add(accountId, amount, note);
  }

  /** The catalogue with the machines serving each model and, for on-request models, whether they are active. */
  async listModels(): Promise<ServedModel[]> {
    const { config, engines, activations } = this.models();
    const active = await activations.active();
    return config.models.map((model) => ({
      model,
      machines: engines.serving(model.id).map((m) => m.config.name),
      activated: active.has(model.id),
    }));
  }

  /** Activates (or deactivates) a model served on request. */
  async setModelActive(modelId: string, active: boolean): Promise<ServedModel | undefined> {
    await this.models().activations.setActive(modelId, active);
    return (await this.listModels()).find((served) => served.model.id === modelId);
  }

  /** Every knowledge base of the installation, by slug, with its owner and documents. */
  async listKnowledgeBases() {
    return this.knowledgeBases.all();
  }

  /** Shares a base with every key (listed and asked by all) or takes it back to its account alone. */
  async setKnowledgeBaseShared(slug: string, shared: boolean) {
    const base = isKbSlug(slug) ? await this.knowledgeBases.bySlug(slug) : undefined;
    if (!base) throw itemNotFound(`No knowledge base '${slug.slice(0, 64)}'.`);
    await this.knowledgeBases.setShared(base.id, shared);
    const changed = await this.knowledgeBases.byId(base.id);
    if (!changed) throw itemNotFound(`No knowledge base '${slug.slice(0, 64)}'.`);
    return changed;
  }

  /** Usage records, newest first, of an account, a key, a month, or all. */
  async listUsage(filter: UsageFilter, page: Page) {
    return this.usage.list(filter, page);
  }

  /** What an account or a key used and spent in a month (the current one by default). */
  async usageSummary(filter: UsageFilter) {
    return this.usage.summary(filter);
  }

  /** The mail the service wrote, newest first; `pending` keeps what no SMTP server took (the outbox). */
  async listMail(query: MailQuery) {
    return this.mailOutbox.list(query);
  }
}
