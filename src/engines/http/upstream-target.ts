import type { MachineConfig } from "../types.ts";
import { UpstreamError } from "../types.ts";

/** Where requests to one machine go: the origin the connection pool is keyed by, and a path prefix. */
export interface UpstreamTarget {
  origin: string;
  /** The path of the machine's `url`, without a trailing slash ("" for a server root). */
  basePath: string;
}

const targets = new Map<string, UpstreamTarget>();

/** The origin and base path of a machine's `url` (parsed once per distinct url). */
export function upstreamTarget(machine: MachineConfig): UpstreamTarget {
  const url = machine.url;
  if (url === undefined) throw new UpstreamError("connect", `machine ${machine.name} has no url`);
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, basePath: parsed.pathname.replace(/\/+$/, "") };
    targets.set(url, target);
  }
  return target;
}

/**
 * The path of an OpenAI-style endpoint under a machine: `url` is the server root
 * (http://host:8000), but operators often paste the `/v1` base instead, which must not double.
 */
export function openAiPath(machine: MachineConfig, endpoint: string): string {
  const { basePath } = upstreamTarget(machine);
  return basePath.endsWith("/v1") ? `${basePath}${endpoint}` : `${basePath}/v1${endpoint}`;
}

/** The path of an endpoint directly under a machine's `url` (Ollama, TEI). */
export function rootPath(machine: MachineConfig, endpoint: string): string {
  return `${upstreamTarget(machine).basePath}${endpoint}`;
}
