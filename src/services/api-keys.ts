import { displayPrefix, generateApiKey, hashApiKey, looksLikeApiKey } from "../auth/api-key-format.ts";
import { KeyCache } from "../auth/key-cache.ts";
import { MAX_AMOUNT, toMicros } from "../billing/money.ts";
import type { Payer } from "../billing/payer.ts";
import { invalidApiKey, invalidRequest, itemNotFound } from "../errors/catalogue.ts";
import { isRowId } from "../store/ids.ts";
import type { ApiKeyRow, ApiKeysRepository } from "../store/repositories/api-keys.ts";
import type { AccountsService } from "./accounts.ts";

/** Who is calling the key API, once the key checked out. */
export interface KeyPrincipal extends Payer {
  keyId: string;
  keyName: string;
  /** The key's own tier limit, used whatever the tier; null or absent: the tier table's. */
  requestsPerMinute?: number | null;
}

/** The highest per-key tier limit the operator may set (requests per minute). */
export const MAX_REQUESTS_PER_MINUTE = 1_000_000;

/** What is needed to issue a key. */
export interface NewApiKey {
  name: string;
  zones?: string[];
  /** Monthly spending limit in the installation's currency. */
  monthlyLimit?: number;
  /** The key's own tier limit in requests per minute; absent: the tier table's. */
  requestsPerMinute?: number;
  expiresAt?: Date;
}

/**
 * Changes to a key: absent fields stay as they are; null clears a setting (all zones, no monthly
 * limit, the tier table's limit, never expires).
 */
export interface ApiKeyChanges {
  name?: string;
  zones?: string[] | null;
  monthlyLimit?: number | null;
  requestsPerMinute?: number | null;
  expiresAt?: Date | null;
}

/** Issuing, listing, revoking and checking API keys. */
export class ApiKeysService {
  private readonly repo: ApiKeysRepository;
  private readonly accounts: AccountsService;
  /** The installation's zones in force (a configuration reload may change them). */
  private readonly zoneIds: () => string[];
  private readonly now: () => Date;
  private readonly cache: KeyCache;

  constructor(deps: {
    repo: ApiKeysRepository;
    accounts: AccountsService;
    zoneIds: () => string[];
    now?: () => Date;
    cache?: KeyCache;
  }) {
    this.repo = deps.repo;
    this.accounts = deps.accounts;
    this.zoneIds = deps.zoneIds;
    this.now = deps.now ?? (() => new Date());
    this.cache = deps.cache ?? new KeyCache();
  }

  /** Issues a key; the returned secret is never stored and cannot be shown again. */
  async create(accountId: string, input: NewApiKey): Promise<{ row: ApiKeyRow; secret: string }> {
    await this.accounts.get(accountId);
    const secret = generateApiKey();
    const row = await this.repo.insert({
      accountId,
      name: checkedName(input.name),
      displayPrefix: displayPrefix(secret),
      keyHash: hashApiKey(secret),
      zones: input.zones === undefined ? null : this.checkedZones(input.zones),
      monthlyLimitMicros: input.monthlyLimit === undefined ? null : checkedMonthlyLimit(input.monthlyLimit),
      requestsPerMinute:
        input.requestsPerMinute === undefined ? null : checkedRequestsPerMinute(input.requestsPerMinute),
      expiresAt: input.expiresAt === undefined ? null : this.checkedExpiry(input.expiresAt),
    });
    return { row, secret };
  }

  /** Changes a key's settings; the change holds for its very next request on this instance. */
  async update(id: string, changes: ApiKeyChanges): Promise<ApiKeyRow> {
    await this.get(id);
    const values: Parameters<ApiKeysRepository["update"]>[1] = {};
    if (changes.name !== undefined) values.name = checkedName(changes.name);
    if (changes.zones !== undefined) values.zones = changes.zones && this.checkedZones(changes.zones);
    if (changes.monthlyLimit !== undefined) {
      values.monthlyLimitMicros =
        changes.monthlyLimit === null ? null : checkedMonthlyLimit(changes.monthlyLimit);
    }
    if (changes.requestsPerMinute !== undefined) {
      values.requestsPerMinute =
        changes.requestsPerMinute === null ? null : checkedRequestsPerMinute(changes.requestsPerMinute);
    }
    if (changes.expiresAt !== undefined) {
      values.expiresAt = changes.expiresAt && this.checkedExpiry(changes.expiresAt);
    }
    const row = await this.repo.update(id, values);
    // As for a revocation: no request of this instance may still see the old settings.
    this.cache.clear();
    if (!row) throw itemNotFound(`API key ${id} not found.`);
    return row;
  }

  async get(id: string): Promise<ApiKeyRow> {
    const row = isRowId(id) ? await this.repo.findById(id) : undefined;
    if (!row) throw itemNotFound(`API key ${id} not found.`);
    return row;
  }

  async list(filter: { accountId?: string }): Promise<ApiKeyRow[]> {
    if (filter.accountId !== undefined) await this.accounts.get(filter.accountId);
    return this.repo.list(filter);
  }

  async revoke(id: string): Promise<ApiKeyRow> {
    await this.get(id);
    const row = await this.repo.revoke(id, this.now());
    this.cache.clear();
    if (!row) throw itemNotFound(`API key ${id} not found.`);
    return row;
  }

  /** Checks an Authorization header of the key API; any failure is 401 `invalid_api_key`. */
  async authenticate(authorization: string | undefined): Promise<KeyPrincipal> {
    if (!authorization || authorization.trim() === "") {
      throw invalidApiKey(
        "You didn't provide an API key. Send it in the Authorization header as Bearer auth " +
          "(Authorization: Bearer sk-...).",
      );
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    const token = match?.[1];
    if (!token) {
      throw invalidApiKey("Invalid Authorization header format. Use Authorization: Bearer sk-...");
    }
    if (!looksLikeApiKey(token)) {
      throw invalidApiKey(
        "Invalid API key format. API keys start with 'sk-'; a signed-in user's token is not an API key " +
          "and works only on the app API.",
      );
    }
    const hash = hashApiKey(token);
    const now = this.now().getTime();
    let found = this.cache.get(hash, now);
    if (!found) {
      found = await this.repo.findByHash(hash);
      if (found) this.cache.set(hash, found, now);
    }
    if (!found) throw invalidApiKey(`Incorrect API key provided: ${displayPrefix(token)}`);
    const { key, accountDisabled } = found;
    if (key.revokedAt) throw invalidApiKey("This API key has been revoked.");
    if (key.expiresAt && key.expiresAt.getTime() <= this.now().getTime()) {
      throw invalidApiKey("This API key has expired.");
    }
    if (accountDisabled) throw invalidApiKey("The account this API key belongs to is disabled.");
    return {
      keyId: key.id,
      accountId: key.accountId,
      keyName: key.name,
      zones: key.zones,
      monthlyLimitMicros: key.monthlyLimitMicros,
      requestsPerMinute: key.requestsPerMinute,
    };
  }

  private checkedZones(zones: string[]): string[] {
    const known = this.zoneIds();
    const unknown = zones.filter((zone) => !known.includes(zone));
    if (zones.length === 0 || unknown.length > 0) {
      throw invalidRequest(
        `'zones' must list zones of the installation (${known.join(", ") || "none declared"}); ` +
          `unknown: ${unknown.join(", ") || "(empty list)"}.`,
        { param: "zones" },
      );
    }
    return [...new Set(zones)];
  }

  private checkedExpiry(expiresAt: Date): Date {
    if (expiresAt.getTime() <= this.now().getTime()) {
      throw invalidRequest("'expires_at' must be in the future.", { param: "expires_at" });
    }
    return expiresAt;
  }
}

function checkedName(raw: string): string {
  const name = raw.trim();
  if (name === "" || name.length > 100) {
    throw invalidRequest("'name' must be 1 to 100 characters.", { param: "name" });
  }
  return name;
}

function checkedMonthlyLimit(amount: number): number {
  if (!(amount >= 0 && amount <= MAX_AMOUNT)) {
    throw invalidRequest(`'monthly_limit' must be between 0 and ${MAX_AMOUNT}.`, { param: "monthly_limit" });
  }
  return toMicros(amount);
}

function checkedRequestsPerMinute(limit: number): number {
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_REQUESTS_PER_MINUTE)) {
    throw invalidRequest(
      `'requests_per_minute' must be a whole number between 1 and ${MAX_REQUESTS_PER_MINUTE}, or null for the tier's limit.`,
      { param: "requests_per_minute" },
    );
  }
  return limit;
}
