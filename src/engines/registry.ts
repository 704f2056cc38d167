import type { Config, TierName } from "../config/schema.ts";
import { CircuitBreaker } from "./circuit-breaker.ts";
import type { MachineConfig } from "./types.ts";

/** A configured machine with its live state. */
export interface Machine {
  config: MachineConfig;
  breaker: CircuitBreaker;
  /** Requests running on it now, for spreading the load by capacity. */
  inFlight: number;
}

/** The machines of the configuration, by the models they serve. */
export class EngineRegistry {
  readonly machines: Machine[];
  private readonly byModel = new Map<string, Machine[]>();

  constructor(config: Config) {
    this.machines = config.machines.map((machine) => ({
      config: machine,
      breaker: new CircuitBreaker(),
      inFlight: 0,
    }));
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

  /** Machines of a protocol in some zones (null: anywhere), whatever models they list. */
  ofProtocol(protocol: MachineConfig["protocol"], zones: ReadonlySet<string> | null): Machine[] {
    return this.machines.filter(
      (machine) => machine.config.protocol === protocol && (zones === null || zones.has(machine.config.zone)),
    );
  }

  /** Machines serving a model at a tier, in some zones. */
  candidates(model: string, zones: ReadonlySet<string> | null, tier: TierName): Machine[] {
    return this.serving(model).filter(
      (machine) =>
        (zones === null || zones.has(machine.config.zone)) &&
        (machine.config.tiers === undefined || machine.config.tiers.includes(tier)),
    );
  }
}
