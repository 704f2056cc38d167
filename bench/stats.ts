/**
 * Latency samples in milliseconds, kept exactly (autocannon's own histogram records whole
 * milliseconds, too coarse for added latencies below one millisecond).
 */
export class Samples {
  private values = new Float64Array(1024);
  private count = 0;

  add(value: number): void {
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = value;
  }

  get size(): number {
    return this.count;
  }

  /** Nearest-rank percentiles (p in 0..100), rounded to microseconds. */
  percentiles(...ps: number[]): number[] {
    if (this.count === 0) return ps.map(() => Number.NaN);
    const sorted = this.values.slice(0, this.count).sort();
    return ps.map((p) => {
      const rank = Math.min(this.count, Math.max(1, Math.ceil((p / 100) * this.count)));
      return round3(sorted[rank - 1] ?? Number.NaN);
    });
  }
}

/** Rounds to three decimals (microseconds when the unit is milliseconds). */
export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** The median of some numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}
