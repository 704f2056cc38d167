import { randomUUID } from "node:crypto";
import { MAX_AMOUNT, toMicros } from "../billing/money.ts";
import type { MoneyBook } from "../billing/money-book.ts";
import { RedisAway } from "../billing/shared/away-from-redis.ts";
import type { SharedMoney } from "../billing/shared/shared-money.ts";
import { invalidRequest } from "../errors/catalogue.ts";
import type { Balance, CreditsAfter, CreditsRepository, TakeChange } from "../store/repositories/credits.ts";
import type { AccountsService } from "./accounts.ts";

/** Prepaid credits of accounts, set and topped up by the operator. */
export class CreditsService {
  private readonly repo: CreditsRepository;
  private readonly accounts: AccountsService;
  private readonly money: MoneyOfBilling;
  constructor(repo: CreditsRepository, accounts: AccountsService, money: MoneyOfBilling) {
    this.repo = repo;
    this.accounts = accounts;
    this.money = money;
  }

  /** The balance and what requests in flight hold of it, in micro-units. */
  async balance(accountId: string): Promise<Balance> {
    await this.accounts.get(accountId);
    const book = await this.money.moneyBook();
    if (book) return book.balance(accountId);
    const shared = this.money.sharedMoney();
    if (!shared) return this.repo.balance(accountId);
    try {
      const [balanceMicros, heldMicros] = await shared.read({ accountId });
      return { balanceMicros, heldMicros };
    } catch (error) {
      // While Redis is away, PostgreSQL decides: what it holds is what is left.
      if (error instanceof RedisAway) return this.repo.balance(accountId);
      throw error;
    }
  }

  async set(accountId: string, balance: number, note: string | null): Promise<Balance> {
    await this.accounts.get(accountId);
    if (!(balance >= 0 && balance <= MAX_AMOUNT)) {
      throw invalidRequest(`'balance' must be between 0 and ${MAX_AMOUNT}.`, { param: "balance" });
    }
    const next = await this.change(accountId, (take) =>
      this.repo.set(accountId, toMicros(balance), note, take),
    );
    if (next === undefined) throw belowHeld("balance");
    return next;
  }

  /** Adds credits; a negative amount takes some away, but never below zero. */
  async add(accountId: string, amount: number, note: string | null): Promise<Balance> {
    await this.accounts.get(accountId);
    if (amount === 0 || Math.abs(amount) > MAX_AMOUNT) {
      throw invalidRequest(`'amount' must be non-zero and at most ${MAX_AMOUNT} either way.`, {
        param: "amount",
      });
    }
    const next = await this.change(accountId, (take) =>
      this.repo.add(accountId, toMicros(amount), note, take),
    );
    if (next === undefined) throw belowHeld("amount");
    return next;
  }

  /**
   * Embedded, the money book decides what is held and left: the change is taken there in the
   * transaction (given back if the transaction fails), once the usage records before it are written.
   */
  private async change(
    accountId: string,
    write: (take: TakeChange | undefined) => Promise<Balance | undefined>,
  ): Promise<Balance | undefined> {
    const shared = this.money.sharedMoney();
    if (shared) {
      try {
        return await this.changeShared(shared, accountId, write);
      } catch (error) {
        // Redis away: the change is decided in PostgreSQL, as everything else meanwhile.
        if (error instanceof RedisAway) return write(undefined);
        throw error;
      }
    }
    const book = await this.money.moneyBook();
    if (!book) return write(undefined);
    await this.money.usageWritten();
    let taken = 0;
    try {
      const next = await write((amount) => {
        const { balanceMicros, heldMicros } = book.balance(accountId);
        if (balanceMicros + amount < Math.max(0, heldMicros)) return false;
        book.changeBalance(accountId, amount);
        taken = amount;
        return true;
      });
      return next && book.balance(accountId);
    } catch (error) {
      book.changeBalance(accountId, -taken);
      throw error;
    }
  }

  /**
   * Distributed mode with Redis: Redis checks the change against what is held while PostgreSQL
   * holds the balance's row (a decrease stays held there until committed), and takes the new
   * balance once committed. A failed commit is closed with what PostgreSQL then holds (the
   * account's copy is then loaded again).
   */
  private async changeShared(
    shared: SharedMoney,
    accountId: string,
    write: (take: TakeChange | undefined) => Promise<Balance | undefined>,
  ): Promise<Balance | undefined> {
    const changeId = `credits-${randomUUID()}`;
    let after: CreditsAfter | undefined;
    let taken = false;
    try {
      const next = await write(async (amount, balance) => {
        after = balance;
        taken = await shared.change(accountId, amount, balance.balanceMicros, changeId);
        return taken;
      });
      if (next === undefined || after === undefined) return undefined;
      const credited = { micros: after.creditedMicros, version: after.version };
      await shared.closeChangeNow(changeId, {
        keyMonths: [],
        credits: [{ accountId, spentMicros: after.spentMicros, credited }],
      });
    } catch (error) {
      if (taken && !(error instanceof RedisAway)) {
        const truth = await shared.totalsOf({ keyId: null, month: "", accountId, prepaid: true });
        await shared.closeAgainNow(changeId, truth);
      }
      throw error;
    }
    return this.balance(accountId);
  }
}

/** What credits need of billing: where the money is decided, and when usage is written. */
export interface MoneyOfBilling {
  moneyBook(): Promise<MoneyBook> | undefined;
  sharedMoney(): SharedMoney | undefined;
  usageWritten(): Promise<void>;
}

function belowHeld(param: string) {
  return invalidRequest(
    "This would leave the balance below zero, or below what requests in flight hold of it.",
    { param, code: "balance_below_zero" },
  );
}
