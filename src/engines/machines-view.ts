import { LATENCY_WINDOW_MINUTES, type LatencySummary } from "./machine-stats.ts";
import type { EngineRegistry, Machine } from "./registry.ts";

/**
 * How a machine is doing: `down` when its last health probe went unanswered (and no request
 * succeeded since); `circuit_open` when failed requests opened its circuit breaker and requests
 * skip it until `until`; `half_open` when that cool-down is over and the next request tries it;
 * `up` otherwise.
 */
export type MachineState = "up" | "down" | "circuit_open" | "half_open";

/** One machine in `GET /admin/v1/machines` (never its api_key). */
export interface MachineView {
  object: "machine";
  name: string;
  zone: string;
  protocol: string;
  url: string | null;
  family: string | null;
  tiers: string[] | null;
  /** Catalogue ids with their kind (`chat`, `embedding`, ...) and the name the engine knows each by. */
  models: Array<{ id: string; kind: string | null; upstream: string }>;
  state: MachineState;
  /** When the open circuit lets a request try again (ISO time); null while it is closed. */
  until: string | null;
  last_error: {
    source: "request" | "probe";
    kind: string;
    status: number | null;
    message: string;
    at: string;
  } | null;
  last_success_at: string | null;
  in_flight: number;
  capacity: number;
  latency_ms: LatencySummary & { window_minutes: number };
}

/** The answer of `GET /admin/v1/machines`. */
export interface MachinesList {
  object: "list";
  data: MachineView[];
}

/**
 * Every machine of a registry as the operator sees it, at `now` (epoch ms); `kindOf` gives a
 * catalogue model's kind.
 */
export function machinesView(
  registry: EngineRegistry,
  now: number,
  kindOf: (model: string) => string | undefined,
): MachinesList {
  return { object: "list", data: registry.machines.map((machine) => machineView(machine, now, kindOf)) };
}

function machineView(
  machine: Machine,
  now: number,
  kindOf: (model: string) => string | undefined,
): MachineView {
  const { config, stats, breaker } = machine;
  const circuit = breaker.state(now);
  const until = breaker.openUntil();
  const state: MachineState = stats.down
    ? "down"
    : circuit === "open"
      ? "circuit_open"
      : circuit === "half-open"
        ? "half_open"
        : "up";
  const error = stats.lastError;
  return {
    object: "machine",
    name: config.name,
    zone: config.zone,
    protocol: config.protocol,
    url: config.url === undefined ? null : withoutCredentials(config.url),
    family: config.family ?? null,
    tiers: config.tiers ?? null,
    models: config.models.map((id) => ({
      id,
      kind: kindOf(id) ?? null,
      upstream: config.upstream_names[id] ?? id,
    })),
    state,
    until: circuit === "open" && until !== undefined ? new Date(until).toISOString() : null,
    last_error: error
      ? {
          source: error.source,
          kind: error.kind,
          status: error.status ?? null,
          message: error.message,
          at: new Date(error.at).toISOString(),
        }
      : null,
    last_success_at: stats.lastSuccessAt === null ? null : new Date(stats.lastSuccessAt).toISOString(),
    in_flight: stats.inFlight,
    capacity: config.capacity,
    latency_ms: { ...stats.latency(now), window_minutes: LATENCY_WINDOW_MINUTES },
  };
}

// A url may carry a user and password (http://user:secret@host): they are as secret as api_key.
function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/?#]*@/i, "$1");
}
