import {
  getMetricsFromIterator,
  type PromData,
  type PromHistogramData,
  type PromMetric,
  type PromMetrics,
} from "prom2javascript";

/** A scrape read by a real Prometheus text-format parser, with look-ups by family and labels. */
export class Scrape {
  readonly families: PromMetrics;

  private constructor(families: PromMetrics) {
    this.families = families;
  }

  /**
   * Parses a scrape; a malformed one (a line it cannot read, a histogram whose +Inf bucket is not
   * its count) fails. The parser reads numbers and +Inf only, where Prometheus also reads NaN and
   * -Inf (prom-client writes `Nan` for the event-loop statistics before their first measure):
   * such samples are left out.
   */
  static async parse(text: string): Promise<Scrape> {
    const lines = text.split("\n").filter((line) => line.startsWith("#") || !/ (?:nan|-inf)$/i.test(line));
    return new Scrape(await getMetricsFromIterator(lines[Symbol.iterator]()));
  }

  /** The family of this name; fails the test when the scrape has none. */
  family(name: string): PromMetric {
    const family = this.families[name];
    if (!family) throw new Error(`no metric family ${name} in the scrape`);
    return family;
  }

  /** The samples of a counter or gauge whose labels include `labels`. */
  samples(name: string, labels: Record<string, string> = {}): PromData[] {
    return (this.family(name).data as PromData[]).filter((sample) => includes(sample.labels, labels));
  }

  /** The value of the one sample of a counter or gauge with exactly these labels (undefined: none). */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    return (this.family(name).data as PromData[]).find((sample) => same(sample.labels, labels))?.value;
  }

  /** The histogram sample with exactly these labels (undefined: none). */
  histogram(name: string, labels: Record<string, string> = {}): PromHistogramData | undefined {
    return (this.family(name).data as PromHistogramData[]).find((sample) => same(sample.labels, labels));
  }
}

function includes(actual: Record<string, string>, expected: Record<string, string>): boolean {
  return Object.entries(expected).every(([label, value]) => actual[label] === value);
}

function same(actual: Record<string, string>, expected: Record<string, string>): boolean {
  return Object.keys(actual).length === Object.keys(expected).length && includes(actual, expected);
}
