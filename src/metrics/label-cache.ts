type Key = string | number;

/**
 * The children of a labelled metric (`metric.labels(...)`), made once per combination of label
 * values and kept in nested maps, so a request looks its child up without building a string.
 * Only for labels whose values are bounded (routes, statuses, catalogue models, machines).
 */
export class LabelCache<C> {
  private readonly make: (values: string[]) => C;
  private readonly root = new Map<Key, unknown>();

  constructor(make: (values: string[]) => C) {
    this.make = make;
  }

  /** The child of these label values, in the metric's label order. */
  get(...keys: Key[]): C {
    let node = this.root;
    const last = keys.length - 1;
    for (let i = 0; i < last; i++) {
      const key = keys[i] as Key;
      let next = node.get(key) as Map<Key, unknown> | undefined;
      if (!next) {
        next = new Map();
        node.set(key, next);
      }
      node = next;
    }
    const leaf = keys[last] as Key;
    let child = node.get(leaf) as C | undefined;
    if (child === undefined) {
      child = this.make(keys.map(String));
      node.set(leaf, child);
    }
    return child;
  }
}
