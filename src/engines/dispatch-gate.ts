import { AsyncLocalStorage } from "node:async_hooks";

const gates = new AsyncLocalStorage<Promise<unknown>>();

/**
 * Runs `work` with every upstream request it sends held back until `gate` settles: a request's
 * money hold is decided (one Redis round trip) while the request is placed and its engine request
 * built, and nothing leaves for an engine before the hold is confirmed. A refused gate (402, 429,
 * 503) is thrown in place of the send, which the router passes on without counting it against the
 * machine.
 */
export function behindGate<T>(gate: Promise<unknown>, work: () => Promise<T>): Promise<T> {
  return gates.run(gate, work);
}

/** The gate of the work this runs in, if any: the upstream client awaits it before sending. */
export function currentGate(): Promise<unknown> | undefined {
  return gates.getStore();
}
