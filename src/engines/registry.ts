import type { Config, TierName } from "../config/schema.ts";
import { breakerSettings, CircuitBreaker } from "./circuit-breaker.ts";
import { MachineStats } from "./machine-stats.ts";
import { type Modality, protocolOffers } from "./modalities.ts";
import type { MachineConfig } from "./types.ts";

/** A configured machine with its live state. */
export interface Machine {
  config: MachineConfig;
  breaker: CircuitBreaker;
  /** In-flight count, last error, latencies: what the machines view shows. */
  stats: MachineStats;
  /** Requests running on it now, for spreading the load by capacity (kept in `stats`). */
  readonly inFlight: number;
}

/** The machines of the configuration, by the models they serve. */
export class EngineRegistry {
  readonly machines: Machine[];
  private readonly byModel = new Map<string, Machine[]>();

  /**
   * `previous` is the registry this one replaces (a configuration reload): a machine with the same
   * name, protocol and url keeps its live state (breaker, requests in flight, statistics).
   */
  constructor(config: Config, previous?: EngineRegistry) {
    const settings = breakerSettings(config.engines);
    const kept = new Map(previous?.machines.map((machine) => [identity(machine.config), machine]));
    this.machines = config.machines.map((machineConfig) => {
      const before = kept.get(identity(machineConfig));
      before?.breaker.configure(settings);
      return machine(
        machineConfig,
        before?.breaker ?? new CircuitBreaker(settings),
        before?.stats ?? new MachineStats(),
      );
    });
    for (const machine of this.machines) {
      for (const model of machine.config.models) {
        const list = this.byModel.get(model) ?? [];
        list.push(machine);
        this.byModel.set(model, list);
      }
    }
  }

  /** Every machine serving a model, wherever it is. */
  serving(model: string): Machine[] {
    return this.byModel.get(model) ?? [];
  }

  /** The machines serving a model whose protocol can do the work (`modality`), wherever they are. */
  able(model: string, modality: Modality): Machine[] {
    return this.serving(model).filter((machine) => protocolOffers(machine.config.protocol, modality));
  }

  /**
   * The machines able to do a model's work that are not known to be down now (their circuit is not
   * open: a refused connection or a failing health probe opens it at once).
   */
  servingUp(model: string, modality: Modality, now = Date.now()): Machine[] {
    return this.able(model, modality).filter((machine) => machine.breaker.state(now) !== "open");
  }

  /** Machines of a protocol in some zones (null: anywhere), whatever models they list. */
  ofProtocol(protocol: MachineConfig["protocol"], zones: ReadonlySet<string> | null): Machine[] {
    return this.machines.filter(
      (machine) => machine.config.protocol === protocol && (zones === null || zones.has(machine.config.zone)),
    );
  }

  /** Machines serving a model at a tier, in some zones, whose protocol can do the work (`modality`). */
  candidates(
    model: string,
    zones: ReadonlySet<string> | null,
    tier: TierName,
    modality: Modality,
  ): Machine[] {
    return this.able(model, modality).filter(
      (machine) =>
        (zones === null || zones.has(machine.config.zone)) &&
        (machine.config.tiers === undefined || machine.config.tiers.includes(tier)),
    );
  }
}

function machine(config: MachineConfig, breaker: CircuitBreaker, stats: MachineStats): Machine {
  return {
    config,
    breaker,
    stats,
    get inFlight() {
      return stats.inFlight;
    },
  };
}

// The same server under the same name: a machine that moved or changed protocol starts afresh.
function identity(config: MachineConfig): string {
  return JSON.stringify([config.name, config.protocol, config.url ?? ""]);
}
