import { collectDefaultMetrics, Registry } from "prom-client";

let shared: Registry | undefined;

/**
 * prom-client's default metrics (CPU, memory, event loop, GC, handles), collected once per process
 * and shared by every app's registry: each collection starts an event-loop monitor and a GC
 * observer that are never stopped, so one per app would pile up in a process that builds many.
 */
export function processMetrics(): Registry {
  if (!shared) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}
