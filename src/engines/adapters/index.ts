import { sharedUpstreamClient, type UpstreamClient } from "../http/upstream-client.ts";
import type { EngineAdapter, MachineConfig } from "../types.ts";
import { createOllamaAdapter } from "./ollama-adapter.ts";
import { createOpenAiAdapter } from "./openai-adapter.ts";
import { createTeiAdapter } from "./tei-adapter.ts";

/** A machine's protocol name. */
export type Protocol = MachineConfig["protocol"];

/** Looks up the adapter of a protocol; undefined for protocols that have none (yet). */
export type AdapterLookup = (protocol: Protocol | string) => EngineAdapter | undefined;

/** The adapters of every protocol that has one, all sharing one HTTP client (and its timeouts and pools). */
export function createAdapters(client: UpstreamClient): AdapterLookup {
  const adapters = new Map<string, EngineAdapter>([
    ["openai", createOpenAiAdapter(client)],
    ["ollama", createOllamaAdapter(client)],
    ["tei", createTeiAdapter(client)],
  ]);
  return (protocol) => adapters.get(protocol);
}

let defaults: AdapterLookup | undefined;

/** The adapter of a protocol over the process-wide client with the default timeouts. */
export function adapterFor(protocol: Protocol | string): EngineAdapter | undefined {
  defaults ??= createAdapters(sharedUpstreamClient());
  return defaults(protocol);
}
