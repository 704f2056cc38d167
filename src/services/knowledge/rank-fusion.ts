/**
 * Reciprocal rank fusion's constant (Cormack, Clarke and Büttcher, 2009): large enough that a first
 * place in one list does not outweigh good places in both.
 */
export const RRF_K = 60;

/** An item after fusion: its fused score and its rank (1 = first) in each list, null where absent. */
export interface Fused<T> {
  item: T;
  score: number;
  ranks: Array<number | null>;
}

/** How lists are fused. */
export interface FuseOptions {
  /** The constant added to every rank; RRF_K when not given. */
  k?: number;
  /** At most this many items come back. */
  limit?: number;
}

/**
 * Merges ranked lists by reciprocal rank fusion: each item scores the sum of 1 / (k + rank) over the
 * lists it is in, so scores of different kinds (cosine, ts_rank) need no common scale. Items are
 * one per key: the first list an item appears in gives the item kept, and a repeat within a list
 * counts at its first place. Best first; equal scores go to the better single rank, then to the
 * earlier list, then to the smaller key, so that the order never depends on chance.
 */
export function fuseRankings<T>(
  lists: ReadonlyArray<ReadonlyArray<T>>,
  keyOf: (item: T) => string,
  options: FuseOptions = {},
): Fused<T>[] {
  const k = options.k ?? RRF_K;
  const fused = new Map<string, Fused<T> & { key: string; best: number; bestList: number }>();
  lists.forEach((list, listIndex) => {
    list.forEach((item, index) => {
      const key = keyOf(item);
      const rank = index + 1;
      let entry = fused.get(key);
      if (entry === undefined) {
        entry = { item, key, score: 0, ranks: lists.map(() => null), best: rank, bestList: listIndex };
        fused.set(key, entry);
      }
      if (entry.ranks[listIndex] !== null) return;
      entry.ranks[listIndex] = rank;
      entry.score += 1 / (k + rank);
      if (rank < entry.best) {
        entry.best = rank;
        entry.bestList = listIndex;
      }
    });
  });
  const ordered = [...fused.values()].sort(
    (a, b) =>
      b.score - a.score ||
      a.best - b.best ||
      a.bestList - b.bestList ||
      (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
  return ordered
    .slice(0, options.limit ?? ordered.length)
    .map(({ item, score, ranks }) => ({ item, score, ranks }));
}
