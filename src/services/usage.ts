import { isMonth, monthOf } from "../billing/month.ts";
import { invalidRequest } from "../errors/catalogue.ts";
import type { UsageRow } from "../store/repositories/billing.ts";
import type { UsageFilter, UsageGroup, UsageRepository } from "../store/repositories/usage.ts";
import type { AccountsService } from "./accounts.ts";
import type { ApiKeysService } from "./api-keys.ts";

/** A month's usage of an account or a key. */
export interface UsageSummary {
  month: string;
  accountId: string | null;
  keyId: string | null;
  groups: UsageGroup[];
  /** For a key: what it spent and holds this month, and its limit. */
  keySpend: { spentMicros: number; reservedMicros: number; monthlyLimitMicros: number | null } | null;
}

/** A key's month as the money book holds it (what it holds now included), where there is one. */
export type BookedSpend = (
  keyId: string,
  month: string,
) => Promise<{ spentMicros: number; reservedMicros: number } | undefined>;

/** Usage records as operators read them: per key, per account, per month. */
export class UsageService {
  private readonly repo: UsageRepository;
  private readonly accounts: AccountsService;
  private readonly keys: ApiKeysService;
  private readonly now: () => Date;
  private readonly written: () => Promise<void>;
  private readonly bookedSpend: BookedSpend;

  /**
   * `written` resolves once the records of every answer that has ended are in the database;
   * `bookedSpend` is a key's month as the money book holds it (embedded), undefined elsewhere.
   */
  constructor(deps: {
    repo: UsageRepository;
    accounts: AccountsService;
    keys: ApiKeysService;
    now: () => Date;
    written: () => Promise<void>;
    bookedSpend: BookedSpend;
  }) {
    this.repo = deps.repo;
    this.bookedSpend = deps.bookedSpend;
    this.written = deps.written;
    this.accounts = deps.accounts;
    this.keys = deps.keys;
    this.now = deps.now;
  }

  async list(filter: UsageFilter, page: { limit: number; offset: number }): Promise<UsageRow[]> {
    await this.check(filter);
    await this.written();
    return this.repo.list(filter, page);
  }

  async summary(filter: UsageFilter): Promise<UsageSummary> {
    await this.check(filter);
    const month = filter.month ?? monthOf(this.now());
    await this.written();
    const groups = await this.repo.groups({ ...filter, month });
    let keySpend: UsageSummary["keySpend"] = null;
    if (filter.keyId) {
      const key = await this.keys.get(filter.keyId);
      keySpend = {
        ...((await this.bookedSpend(filter.keyId, month)) ?? (await this.repo.keySpend(filter.keyId, month))),
        monthlyLimitMicros: key.monthlyLimitMicros,
      };
    }
    return { month, accountId: filter.accountId ?? null, keyId: filter.keyId ?? null, groups, keySpend };
  }

  private async check(filter: UsageFilter): Promise<void> {
    if (filter.month !== undefined && !isMonth(filter.month)) {
      throw invalidRequest("'month' must be a month as YYYY-MM, such as 2026-11.", { param: "month" });
    }
    if (filter.accountId !== undefined) await this.accounts.get(filter.accountId);
    if (filter.keyId !== undefined) await this.keys.get(filter.keyId);
  }
}
