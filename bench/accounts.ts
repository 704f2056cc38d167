// The accounts and keys of the runs through Zona: the unlimited key's (no monthly limit, postpaid),
// and those of the billed targets, keys with a monthly limit on the same Zona and an account with
// prepaid credits on the second Zona. The amounts are never reached in a run: a request refused for
// money would be fast, and measure nothing of the money path.
import { KeyPool } from "./key-pool.ts";
import { issueKeys, openAccount, type StartedZona, setCredits, warmKey } from "./zona.ts";

// The config raises the chat endpoint limit (rate_limits.endpoint_limits), so one key carries the
// whole run, as one busy client would; the pool only matters with the spec's 60 per minute (then 55
// here: below the limit, with room for the requests autocannon builds ahead of sending them).
export const PER_KEY_AND_WINDOW = 100_000_000;
const KEY_WINDOW_MS = 62_000;

/** Each key's monthly limit, in the installation's currency (CHF): far above what a run spends. */
export const MONTHLY_LIMIT = 100_000_000;
/** The prepaid account's balance: the most `PUT /admin/v1/accounts/{id}/credits` takes. */
export const PREPAID_BALANCE = 1_000_000_000;

/** How an account pays: a monthly limit on each of its keys, or credits on the account. */
export interface Money {
  monthlyLimit?: number;
  credits?: number;
}

/** An account on a Zona and the pool of its keys. */
export interface KeyedZona {
  zona: StartedZona;
  accountId: string;
  pool: KeyPool;
  money: Money;
}

/**
 * Opens an account on `zona`, gives it its credits, and issues `count` keys (with their monthly
 * limit) into a pool that warms the next key while the current one still has room.
 */
export async function keyedZona(zona: StartedZona, count: number, money: Money = {}): Promise<KeyedZona> {
  const accountId = await openAccount(zona);
  if (money.credits !== undefined) await setCredits(zona, accountId, money.credits);
  const warm = (secret: string) => void warmKey(zona.url, secret).catch(() => {});
  const pool = new KeyPool({ perWindow: PER_KEY_AND_WINDOW, windowMs: KEY_WINDOW_MS, warm });
  const keyed = { zona, accountId, pool, money };
  await issueMore(keyed, count);
  return keyed;
}

/** The engine and the stack floor ignore keys: their runs rotate dummy ones, for the same client work. */
export function dummyPool(): KeyPool {
  const pool = new KeyPool({ perWindow: PER_KEY_AND_WINDOW, windowMs: 0 });
  pool.add(Array.from({ length: 16 }, (_, i) => `sk-direct-${String(i).padStart(40, "0")}`));
  return pool;
}

/**
 * Issues more keys when the coming run, at `perSecond`, would use them up faster than the
 * limiter's window frees them; how many were issued.
 */
export async function topUpKeys(keyed: KeyedZona, perSecond: number): Promise<number> {
  const missing = keyed.pool.keysFor(perSecond) - keyed.pool.size;
  if (missing <= 0) return 0;
  await issueMore(keyed, missing);
  return missing;
}

async function issueMore(keyed: KeyedZona, count: number): Promise<void> {
  const { accountId, money } = keyed;
  const { secrets } = await issueKeys(keyed.zona, count, { accountId, monthlyLimit: money.monthlyLimit });
  keyed.pool.add(secrets);
}
