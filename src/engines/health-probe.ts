import type { FastifyBaseLogger } from "fastify";
import type { MachineError } from "./machine-stats.ts";
import type { EngineRegistry, Machine } from "./registry.ts";

/** How often machines are asked and how long an answer is waited for (config `engines.probe_*`). */
export interface ProbeTimings {
  intervalMs: number;
  timeoutMs: number;
}

/** The defaults of the configuration: every 10 s, 2 s to answer. */
export const DEFAULT_PROBE_TIMINGS: ProbeTimings = { intervalMs: 10_000, timeoutMs: 2_000 };

/**
 * Where a machine answers a cheap request, by protocol (any answer below 500 means it is up);
 * `/health` for the others (vLLM, TEI, speaches and recent whisper.cpp servers have one; a server
 * without it still answers 404, which counts as up). Piper's server only has `POST /`: a GET
 * there answers 405, which is enough.
 */
const PROBE_PATH: Record<string, string> = { ollama: "/api/version", piper: "/" };

/** Protocols that run inside Zona (no server to ask): always up as far as probes go. */
const BUILT_IN = new Set(["espeak"]);

/**
 * Active health checks: every machine is asked a cheap question periodically; one that does not
 * answer is marked down before a request finds out, and one that answers again is taken back at
 * once (its circuit closes, whatever the cool-down left).
 */
export class HealthProbe {
  private readonly registry: EngineRegistry;
  private readonly log: FastifyBaseLogger | undefined;
  private readonly timings: ProbeTimings;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    registry: EngineRegistry,
    log?: FastifyBaseLogger,
    timings: ProbeTimings = DEFAULT_PROBE_TIMINGS,
  ) {
    this.registry = registry;
    this.log = log;
    this.timings = timings;
  }

  start(): void {
    if (this.timer || this.registry.machines.length === 0) return;
    this.timer = setInterval(() => void this.tick(), this.timings.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Asks every machine once, now. */
  async probeAll(): Promise<void> {
    await Promise.all(
      this.registry.machines
        .filter((m) => m.config.url && !BUILT_IN.has(m.config.protocol))
        .map((machine) => this.probe(machine)),
    );
  }

  // A round still running (machines slow to time out) is not doubled by the next tick.
  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = this.probeAll().finally(() => {
      this.running = undefined;
    });
    await this.running;
  }

  private async probe(machine: Machine): Promise<void> {
    const root = probeRoot(machine.config.url ?? "");
    const before = machine.breaker.state(Date.now());
    const wasDown = machine.stats.down;
    let failure: Omit<MachineError, "source" | "at"> | undefined;
    try {
      const response = await fetch(`${root}${PROBE_PATH[machine.config.protocol] ?? "/health"}`, {
        signal: AbortSignal.timeout(this.timings.timeoutMs),
        ...(machine.config.api_key ? { headers: { authorization: `Bearer ${machine.config.api_key}` } } : {}),
      });
      await response.body?.cancel();
      if (response.status >= 500) {
        failure = {
          kind: "status",
          status: response.status,
          message: `the probe was answered ${response.status}`,
        };
      }
    } catch (error) {
      failure = probeFailure(error, this.timings.timeoutMs);
    }
    if (failure === undefined) {
      machine.stats.probeUp();
      if (before !== "closed" || wasDown) {
        machine.breaker.success();
        this.log?.info({ machine: machine.config.name, zone: machine.config.zone }, "machine answers again");
      }
      return;
    }
    machine.breaker.failure(Date.now(), true);
    machine.stats.probeDown(failure, Date.now());
    if (!wasDown) {
      this.log?.warn(
        {
          machine: machine.config.name,
          zone: machine.config.zone,
          error_kind: failure.kind,
          ...(failure.status !== undefined ? { upstream_status: failure.status } : {}),
          reason: failure.message,
        },
        "machine does not answer its probe",
      );
    }
  }
}

/** The probe timings of a configuration's `engines` section. */
export function probeTimings(engines: {
  probe_interval_seconds: number;
  probe_timeout_ms: number;
}): ProbeTimings {
  return { intervalMs: engines.probe_interval_seconds * 1000, timeoutMs: engines.probe_timeout_ms };
}

// The server root, without the `/v1` operators often paste, nor a user and password (requests leave them out too).
function probeRoot(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "").replace(/\/v1$/, "")}`;
}

// fetch's own messages carry the address; only the error code is kept.
function probeFailure(error: unknown, timeoutMs: number): Omit<MachineError, "source" | "at"> {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return { kind: "timeout", message: `the probe was not answered within ${timeoutMs} ms` };
  }
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === "string" ? cause.code : "no answer";
  return { kind: "connect", message: `the probe could not reach the machine (${code})` };
}
