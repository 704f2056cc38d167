/** A scored item: higher scores are better, equal scores are ordered by id. */
export interface Scored {
  id: string;
  score: number;
}

/** Whether `a` ranks before `b`: the higher score, then the smaller id (so that ties come out the same every time). */
export function ranksBefore(a: Scored, b: Scored): boolean {
  return a.score > b.score || (a.score === b.score && a.id < b.id);
}

/**
 * The best `k` of a stream of scored items, kept in a min-heap of size k: offering n items costs
 * O(n log k) time and O(k) memory, so an exact scan over many passages holds only the winners.
 */
export class TopK<T extends Scored> {
  private readonly heap: T[] = [];
  private readonly k: number;

  constructor(k: number) {
    this.k = Math.max(0, Math.floor(k));
  }

  /** Keeps the item when it is among the best k seen so far. */
  offer(item: T): void {
    if (this.k === 0) return;
    if (this.heap.length < this.k) {
      this.heap.push(item);
      this.siftUp(this.heap.length - 1);
      return;
    }
    const worst = this.heap[0];
    if (worst === undefined || !ranksBefore(item, worst)) return;
    this.heap[0] = item;
    this.siftDown(0);
  }

  /** The kept items, best first. */
  sorted(): T[] {
    return [...this.heap].sort((a, b) => (ranksBefore(a, b) ? -1 : ranksBefore(b, a) ? 1 : 0));
  }

  // The root is the worst kept item: the one a better newcomer replaces.
  private siftUp(index: number): void {
    let child = index;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (!this.worse(child, parent)) return;
      this.swap(child, parent);
      child = parent;
    }
  }

  private siftDown(index: number): void {
    let parent = index;
    for (;;) {
      const left = 2 * parent + 1;
      const right = left + 1;
      let worst = parent;
      if (left < this.heap.length && this.worse(left, worst)) worst = left;
      if (right < this.heap.length && this.worse(right, worst)) worst = right;
      if (worst === parent) return;
      this.swap(parent, worst);
      parent = worst;
    }
  }

  private worse(i: number, j: number): boolean {
    const a = this.heap[i];
    const b = this.heap[j];
    return a !== undefined && b !== undefined && ranksBefore(b, a);
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i];
    const b = this.heap[j];
    if (a === undefined || b === undefined) return;
    this.heap[i] = b;
    this.heap[j] = a;
  }
}
