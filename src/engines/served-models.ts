import type { MachineConfig } from "./types.ts";

/**
 * The name a machine's engine knows a catalogue model by: the machine's `upstream` name for it
 * (`models: [{id: gemma3.8-27b, upstream: google/gemma-3-27b-it}]`), else the catalogue id itself.
 * Adapters send this name upstream; clients only ever see the catalogue id.
 */
export function upstreamModel(machine: MachineConfig, catalogueId: string): string {
  const names = machine.upstream_names;
  // hasOwn: a catalogue id such as "constructor" must not find the object's prototype.
  return names !== undefined && Object.hasOwn(names, catalogueId)
    ? (names[catalogueId] ?? catalogueId)
    : catalogueId;
}

/** A model a machine is declared for, with the name its engine should know it by. */
export interface DeclaredModel {
  /** The catalogue id. */
  id: string;
  /** The engine's name for it. */
  upstream: string;
}

/** The models a machine is declared for, each with its upstream name, in the configuration's order. */
export function declaredModels(machine: MachineConfig): DeclaredModel[] {
  return machine.models.map((id) => ({ id, upstream: upstreamModel(machine, id) }));
}
