import type { Config } from "../config/schema.ts";
import type { Store } from "../store/database.ts";
import { AccountsRepository } from "../store/repositories/accounts.ts";
import { ApiKeysRepository } from "../store/repositories/api-keys.ts";
import { CreditsRepository } from "../store/repositories/credits.ts";
import { AccountsService } from "./accounts.ts";
import { ApiKeysService } from "./api-keys.ts";
import { CreditsService } from "./credits.ts";
import { Operator } from "./operator.ts";

/** The domain services of one process, over one store. */
export interface Services {
  accounts: AccountsService;
  keys: ApiKeysService;
  credits: CreditsService;
  operator: Operator;
}

/** Builds the services; `now` lets tests move the clock. */
export function createServices(config: Config, store: Store, now: () => Date = () => new Date()): Services {
  const accounts = new AccountsService(new AccountsRepository(store.db), config.installation.language);
  const keys = new ApiKeysService({
    repo: new ApiKeysRepository(store.db),
    accounts,
    zoneIds: config.installation.zones.map((zone) => zone.id),
    now,
  });
  const credits = new CreditsService(new CreditsRepository(store.db), accounts);
  const operator = new Operator({ accounts, keys, credits, currency: config.installation.currency, now });
  return { accounts, keys, credits, operator };
}
