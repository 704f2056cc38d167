import type { EngineRegistry } from "../engines/registry.ts";
import type { MetricsRegistry } from "./metrics-registry.ts";

/**
 * `zona_machine_up{machine,zone,protocol}` (1 when its circuit is closed, 0 when it is open or
 * waiting for a trial) and `zona_machine_in_flight{machine}`, read at every scrape from the machines
 * in force: `engines` is asked each time, so a configuration reload's new registry is the one shown.
 */
export function registerMachineMetrics(
  metrics: MetricsRegistry,
  engines: () => EngineRegistry,
  now: () => number = Date.now,
): void {
  metrics.gauge(
    "zona_machine_up",
    "Whether a machine takes requests: 1 up, 0 down (its circuit is open after failures or failed probes).",
    ["machine", "zone", "protocol"],
    (gauge) => {
      gauge.reset();
      const at = now();
      for (const machine of engines().machines) {
        const { name, zone, protocol } = machine.config;
        gauge.labels(name, zone, protocol).set(machine.breaker.state(at) === "closed" ? 1 : 0);
      }
    },
  );
  metrics.gauge(
    "zona_machine_in_flight",
    "Requests running on a machine now (streams until they end).",
    ["machine"],
    (gauge) => {
      gauge.reset();
      for (const machine of engines().machines) gauge.labels(machine.config.name).set(machine.inFlight);
    },
  );
}
