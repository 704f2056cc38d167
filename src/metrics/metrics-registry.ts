/** A monotonic counter of the metrics registry. */
export interface Counter {
  inc(by?: number): void;
  readonly value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** The named counters of one process, exposed in the Prometheus text format. */
export class MetricsRegistry {
  private readonly counters = new Map<string, { help: string; value: number }>();

  /** The counter of this name, created at 0 on first use; the same name always gives the same counter. */
  counter(name: string, help: string): Counter {
    if (!NAME.test(name)) throw new Error(`invalid metric name: ${name}`);
    let entry = this.counters.get(name);
    if (!entry) {
      entry = { help, value: 0 };
      this.counters.set(name, entry);
    }
    const state = entry;
    return {
      inc(by = 1) {
        if (by < 0) throw new Error("a counter only goes up");
        state.value += by;
      },
      get value() {
        return state.value;
      },
    };
  }

  /** Every counter in the Prometheus text exposition format (version 0.0.4). */
  render(): string {
    let text = "";
    for (const [name, { help, value }] of [...this.counters].sort(([a], [b]) => a.localeCompare(b))) {
      text += `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n`;
      text += `# TYPE ${name} counter\n${name} ${value}\n`;
    }
    return text;
  }
}
