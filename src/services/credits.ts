import { MAX_AMOUNT, toMicros } from "../billing/money.ts";
import { invalidRequest } from "../http/errors.ts";
import type { Balance, CreditsRepository } from "../store/repositories/credits.ts";
import type { AccountsService } from "./accounts.ts";

/** Prepaid credits of accounts, set and topped up by the operator. */
export class CreditsService {
  private readonly repo: CreditsRepository;
  private readonly accounts: AccountsService;
  constructor(repo: CreditsRepository, accounts: AccountsService) {
    this.repo = repo;
    this.accounts = accounts;
  }

  /** The balance and what requests in flight hold of it, in micro-units. */
  async balance(accountId: string): Promise<Balance> {
    await this.accounts.get(accountId);
    return this.repo.balance(accountId);
  }

  async set(accountId: string, balance: number, note: string | null): Promise<Balance> {
    await this.accounts.get(accountId);
    if (!(balance >= 0 && balance <= MAX_AMOUNT)) {
      throw invalidRequest(`'balance' must be between 0 and ${MAX_AMOUNT}.`, { param: "balance" });
    }
    const next = await this.repo.set(accountId, toMicros(balance), note);
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
    const next = await this.repo.add(accountId, toMicros(amount), note);
    if (next === undefined) throw belowHeld("amount");
    return next;
  }
}

function belowHeld(param: string) {
  return invalidRequest(
    "This would leave the balance below zero, or below what requests in flight hold of it.",
    { param, code: "balance_below_zero" },
  );
}
