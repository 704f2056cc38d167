import type { FastifyBaseLogger } from "fastify";
import { BillingService } from "../billing/billing-service.ts";
import { PriceList } from "../billing/prices.ts";
import type { Config } from "../config/schema.ts";
import type { Store } from "../store/database.ts";
import { AccountsRepository } from "../store/repositories/accounts.ts";
import { ApiKeysRepository } from "../store/repositories/api-keys.ts";
import { BillingRepository } from "../store/repositories/billing.ts";
import { CreditsRepository } from "../store/repositories/credits.ts";
import { UsageRepository } from "../store/repositories/usage.ts";
import { AccountsService } from "./accounts.ts";
import { ApiKeysService } from "./api-keys.ts";
import { CreditsService } from "./credits.ts";
import { Operator } from "./operator.ts";
import { UsageService } from "./usage.ts";

/** The domain services of one process, over one store. */
export interface Services {
  accounts: AccountsService;
  keys: ApiKeysService;
  credits: CreditsService;
  billing: BillingService;
  prices: PriceList;
  usage: UsageService;
  operator: Operator;
}

/** Builds the services; `now` lets tests move the clock. */
export function createServices(
  config: Config,
  store: Store,
  now: () => Date = () => new Date(),
  log?: FastifyBaseLogger,
): Services {
  const accounts = new AccountsService(new AccountsRepository(store.db), config.installation.language);
  const keys = new ApiKeysService({
    repo: new ApiKeysRepository(store.db),
    accounts,
    zoneIds: config.installation.zones.map((zone) => zone.id),
    now,
  });
  const credits = new CreditsService(new CreditsRepository(store.db), accounts);
  const billing = new BillingService({
    repo: new BillingRepository(store.db),
    prepaid: config.installation.prepaid,
    holdSeconds: config.billing.reservation_timeout_seconds,
    now,
    ...(log ? { log } : {}),
  });
  const usage = new UsageService({ repo: new UsageRepository(store.db), accounts, keys, now });
  const operator = new Operator({
    accounts,
    keys,
    credits,
    usage,
    currency: config.installation.currency,
    now,
  });
  return { accounts, keys, credits, billing, prices: new PriceList(config), usage, operator };
}
