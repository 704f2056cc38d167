/**
 * Money held in Redis: by a request in flight (`r`), by a durable job such as a video until its row
 * is written (`d`), or by an operator's decrease of credits until it is committed (`c`).
 */
export interface SharedHold {
  requestId: string;
  keyId: string | null;
  month: string;
  accountId: string;
  prepaid: boolean;
  amountMicros: number;
  kind: "r" | "d" | "c";
  /** The endpoint and model as recorded in usage, for the record the sweep writes. */
  endpoint: string;
  model: string | null;
  /** Epoch ms after which the sweep gives it back. */
  expiresAt: number;
}

/** The key month a hold takes from, as the scripts name it; empty without a key. */
export function keyMonthOf(hold: { keyId: string | null; month: string }): string {
  return hold.keyId === null ? "" : `${hold.keyId}:${hold.month}`;
}

/**
 * A hold as stored in Redis: tab-separated, the fields the scripts read first (the hold script its
 * key month, account, prepaid and amount, and its expiry, last).
 */
export function holdText(hold: SharedHold): string {
  return `${keyMonthOf(hold)}\t${hold.accountId}\t${hold.prepaid ? "1" : "0"}\t${hold.amountMicros}\t${hold.kind}\t${hold.endpoint}\t${hold.model ?? ""}\t${hold.month}\t${hold.expiresAt}`;
}

/** A hold read back from Redis; undefined for text this version did not write. */
export function parseHold(requestId: string, text: string): SharedHold | undefined {
  const [keyMonth, accountId, prepaid, amount, kind, endpoint, model, month, expiresAt] = text.split("\t");
  if (accountId === undefined || month === undefined || (kind !== "r" && kind !== "d" && kind !== "c")) {
    return undefined;
  }
  return {
    requestId,
    keyId: keyMonth ? (keyMonth.split(":")[0] ?? null) : null,
    month,
    accountId,
    prepaid: prepaid === "1",
    amountMicros: Number(amount),
    kind,
    endpoint: endpoint ?? "",
    model: model ? model : null,
    expiresAt: Number(expiresAt),
  };
}
