import type { Config } from "../config/schema.ts";

/**
 * Options that the running process built its foundations from (listeners, stores, tokens, mail,
 * billing mode, trusted networks): a reload leaves them as they are and says they wait for a restart.
 */
const RESTART_ONLY: ReadonlyArray<readonly string[]> = [
  ["server"],
  ["app"],
  ["billing"],
  ["installation", "language"],
  ["installation", "currency"],
  ["installation", "prepaid"],
  ["installation", "trusted_networks"],
  ["rate_limits", "redis_timeout_ms"],
  ["engines", "connect_timeout_ms"],
  ["engines", "first_byte_timeout_ms"],
  ["engines", "idle_timeout_ms"],
  ["knowledge", "read_memory_mb"],
  ["knowledge", "read_timeout_seconds"],
  ["knowledge", "concurrent_reads"],
];

/** The configuration to put in force: the new one, with the restart-only options of the running one. */
export function keepRestartOnly(
  current: Config,
  next: Config,
): { config: Config; restartRequired: string[] } {
  const config = structuredClone(next);
  const restartRequired: string[] = [];
  for (const path of RESTART_ONLY) {
    if (!same(get(current, path), get(next, path))) restartRequired.push(path.join("."));
    set(config, path, get(current, path));
  }
  return { config, restartRequired };
}

/** What a new configuration changes for new requests, one phrase each. */
export function describeChanges(before: Config, after: Config): string[] {
  const changes: string[] = [];
  const machinesBefore = new Map(before.machines.map((machine) => [machine.name, machine]));
  const machinesAfter = new Map(after.machines.map((machine) => [machine.name, machine]));
  for (const [name, machine] of machinesAfter) {
    const old = machinesBefore.get(name);
    if (!old) changes.push(`machine ${name} added`);
    else if (!same(old, machine)) changes.push(`machine ${name} changed`);
  }
  for (const name of machinesBefore.keys()) {
    if (!machinesAfter.has(name)) changes.push(`machine ${name} removed`);
  }
  const modelsBefore = new Map(before.models.map((model) => [model.id, model]));
  const modelsAfter = new Map(after.models.map((model) => [model.id, model]));
  for (const [id, model] of modelsAfter) {
    const old = modelsBefore.get(id);
    if (!old) changes.push(`model ${id} added`);
    else if (!same(old, model)) changes.push(`model ${id} changed`);
  }
  for (const id of modelsBefore.keys()) if (!modelsAfter.has(id)) changes.push(`model ${id} removed`);
  for (const section of ["installation", "tiers", "prices", "rate_limits", "engines"] as const) {
    if (!same(before[section], after[section])) changes.push(section);
  }
  return changes;
}

function get(config: unknown, path: readonly string[]): unknown {
  let value = config;
  for (const part of path) value = (value as Record<string, unknown> | undefined)?.[part];
  return value;
}

function set(config: unknown, path: readonly string[], value: unknown): void {
  let target = config as Record<string, unknown>;
  for (const part of path.slice(0, -1)) target = target[part] as Record<string, unknown>;
  target[path[path.length - 1] as string] = structuredClone(value);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
