import type { FastifyBaseLogger } from "fastify";
import type { EngineRegistry, Machine } from "./registry.ts";

const EVERY_MS = 10_000;
const TIMEOUT_MS = 2_000;

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
 * answer is marked down before a request finds out, and one that answers again is taken back.
 */
export class HealthProbe {
  private readonly registry: EngineRegistry;
  private readonly log: FastifyBaseLogger | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(registry: EngineRegistry, log?: FastifyBaseLogger) {
    this.registry = registry;
    this.log = log;
  }

  start(): void {
    if (this.timer || this.registry.machines.length === 0) return;
    this.timer = setInterval(() => void this.probeAll(), EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  async probeAll(): Promise<void> {
    await Promise.all(
      this.registry.machines
        .filter((m) => m.config.url && !BUILT_IN.has(m.config.protocol))
        .map((machine) => this.probe(machine)),
    );
  }

  private async probe(machine: Machine): Promise<void> {
    const root = (machine.config.url ?? "").replace(/\/+$/, "").replace(/\/v1$/, "");
    const before = machine.breaker.state(Date.now());
    try {
      const response = await fetch(`${root}${PROBE_PATH[machine.config.protocol] ?? "/health"}`, {
        signal: AbortSignal.timeout(TIMEOUT_MS),
        ...(machine.config.api_key ? { headers: { authorization: `Bearer ${machine.config.api_key}` } } : {}),
      });
      await response.body?.cancel();
      if (response.status >= 500) throw new Error(`status ${response.status}`);
      if (before !== "closed") {
        machine.breaker.success();
        this.log?.info({ machine: machine.config.name }, "machine answers again");
      }
    } catch {
      machine.breaker.failure(Date.now(), true);
      if (before === "closed")
        this.log?.warn({ machine: machine.config.name }, "machine does not answer its probe");
    }
  }
}
