import type { MachineConfig } from "../../src/engines/types.ts";

/** A machine of the configuration pointing at a fake (zone `ch`, capacity 1 unless overridden). */
export function fakeMachine(
  protocol: MachineConfig["protocol"],
  url: string,
  overrides: Partial<MachineConfig> = {},
): MachineConfig {
  return {
    name: `fake-${protocol}`,
    zone: "ch",
    protocol,
    url,
    models: [],
    upstream_names: {},
    capacity: 1,
    ...overrides,
  };
}
