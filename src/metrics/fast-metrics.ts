/**
 * Counters and histograms for the hot path, read by prom-client's Registry like its own metrics.
 * prom-client's labelled children validate and hash their labels on every `inc`/`observe` (a few
 * microseconds, several times per request); here a child is a plain object made once per
 * combination of label values, and counting is adding to a number.
 */

type LabelValue = string | number;
type Labels = Record<string, string>;

/** One sample as prom-client's Registry formats it. */
interface Sample {
  value: number;
  labels: Labels;
  metricName?: string;
}

/** What prom-client's Registry reads from a metric at every scrape. */
interface MetricSnapshot {
  name: string;
  help: string;
  type: "counter" | "histogram";
  values: Sample[];
  aggregator: "sum";
}

/** One combination of label values of a counter. */
export interface CounterChild {
  inc(by?: number): void;
}

/** One combination of label values of a histogram. */
export interface HistogramChild {
  observe(value: number): void;
}

/** The series of one metric by their label values, made once per combination. */
abstract class Series<C> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = "sum" as const;
  protected readonly labelNames: readonly string[];
  protected readonly children = new Map<string, { labels: Labels; child: C }>();

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
  }

  /** The child of these label values (in the order of the label names); the same values give the same child. */
  labels(...values: LabelValue[]): C {
    if (values.length !== this.labelNames.length) {
      throw new Error(`${this.name} takes ${this.labelNames.length} label values, got ${values.length}`);
    }
    const key = values.join("\u0000");
    let entry = this.children.get(key);
    if (!entry) {
      const labels: Labels = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = String(values[i]);
      });
      entry = { labels, child: this.make() };
      this.children.set(key, entry);
    }
    return entry.child;
  }

  /** The child of labels given by name (for rare events; the hot path keeps its children). */
  protected byName(labels: Partial<Record<string, LabelValue>>): C {
    return this.labels(...this.labelNames.map((name) => labels[name] ?? ""));
  }

  /** Forgets every series (tests). */
  reset(): void {
    this.children.clear();
  }

  protected abstract make(): C;
}

/** A monotonic counter. */
export class FastCounter<L extends string = string> extends Series<CounterChild & { value: number }> {
  readonly type = "counter" as const;

  constructor(name: string, help: string, labelNames: readonly L[] = []) {
    super(name, help, labelNames);
    // Without labels the one series exists from the start, at 0, as Prometheus expects.
    if (labelNames.length === 0) this.labels();
  }

  /** Adds to the counter without labels, or to the series of `labels` (by name). */
  inc(labelsOrBy?: Partial<Record<L, LabelValue>> | number, by = 1): void {
    if (typeof labelsOrBy === "object") this.byName(labelsOrBy).inc(by);
    else this.labels().inc(labelsOrBy ?? 1);
  }

  /** The value of the counter without labels. */
  get value(): number {
    return this.labels().value;
  }

  get(): MetricSnapshot {
    const values = [...this.children.values()].map(({ labels, child }) => ({ value: child.value, labels }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  protected make() {
    const child = {
      value: 0,
      inc(by = 1) {
        if (!(by >= 0)) throw new Error("a counter only goes up");
        child.value += by;
      },
    };
    return child;
  }
}

interface HistogramState extends HistogramChild {
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram with fixed upper bounds. */
export class FastHistogram<L extends string = string> extends Series<HistogramState> {
  readonly type = "histogram" as const;
  private readonly bounds: readonly number[];

  constructor(name: string, help: string, labelNames: readonly L[], buckets: readonly number[]) {
    super(name, help, labelNames);
    this.bounds = [...buckets].sort((a, b) => a - b);
    if (labelNames.length === 0) this.labels();
  }

  /** Observes a value without labels. */
  observe(value: number): void {
    this.labels().observe(value);
  }

  get(): MetricSnapshot {
    const values: Sample[] = [];
    for (const { labels, child } of this.children.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += child.counts[i] ?? 0;
        values.push({
          value: cumulative,
          labels: { le: String(bound), ...labels },
          metricName: `${this.name}_bucket`,
        });
      });
      values.push({
        value: child.count,
        labels: { le: "+Inf", ...labels },
        metricName: `${this.name}_bucket`,
      });
      values.push({ value: child.sum, labels, metricName: `${this.name}_sum` });
      values.push({ value: child.count, labels, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  protected make(): HistogramState {
    const bounds = this.bounds;
    const state: HistogramState = {
      counts: new Float64Array(bounds.length + 1),
      sum: 0,
      count: 0,
      observe(value: number) {
        if (!Number.isFinite(value)) return;
        let i = 0;
        while (i < bounds.length && value > (bounds[i] as number)) i++;
        state.counts[i] = (state.counts[i] ?? 0) + 1;
        state.sum += value;
        state.count += 1;
      },
    };
    return state;
  }
}
