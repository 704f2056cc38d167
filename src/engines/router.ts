import type { FastifyBaseLogger } from "fastify";
import type { TierName } from "../config/schema.ts";
import { badGateway, modelUnavailable, zoneUnavailable } from "../errors/catalogue.ts";
import type { RequestTrace } from "../trace/request-trace.ts";
import type { AdapterLookup } from "./adapters/index.ts";
import { MESSAGE_LIMIT } from "./machine-stats.ts";
import { type Modalities, type Modality, offered } from "./modalities.ts";
import type { EngineRegistry, Machine } from "./registry.ts";
import { UpstreamError } from "./types.ts";
import { upstreamLogFields } from "./upstream-log.ts";
import type { UpstreamAttempt, UpstreamObserver } from "./upstream-observer.ts";

/** Where a request may run and what it prefers. */
export interface Placement {
  model: string;
  /** Zones the request may run in; null: any machine (embeddings and rerank have no zone selection). */
  zones: string[] | null;
  tier: TierName;
  /** A machine family to try first (the app API's `backend`). */
  preferFamily?: string;
  /** The request's trace: the router writes the machine, zone and upstream time into it. */
  trace?: RequestTrace;
}

/** What one machine answered. `finish` marks the machine free again (streams call it at their end). */
export interface Routed<T> {
  zone: string;
  machine: string;
  result: T;
  finish(): void;
}

/** Tries one machine; throws an UpstreamError to move on to the next. */
export type Attempt<K extends Modality, T> = (machine: Machine, engine: Modalities[K]) => Promise<T>;

/** What the router is built with. */
export interface RouterOptions {
  adapters: AdapterLookup;
  installationHasZones: boolean;
  now?: () => number;
  /** Where failed attempts are logged (one `warn` line each). */
  log?: FastifyBaseLogger;
  /** Hears of every attempt (metrics). */
  observer?: UpstreamObserver;
}

/** What a run is about, for the statistics, the log and the trace. */
interface RunLabel {
  model: string;
  trace: RequestTrace | undefined;
  /** Whether the trace takes the machine and zone (not for side checks such as moderation). */
  placesTrace: boolean;
}

/**
 * Placement and failover: machines of the allowed zones serving the model at the tier, healthy
 * ones first and the least busy (by capacity) before the others; a machine that refuses, errors or
 * times out is marked (circuit breaker) and the next one is tried. The zones are never left.
 */
export class Router {
  private readonly registry: EngineRegistry;
  private readonly installationHasZones: boolean;
  private readonly adapters: AdapterLookup;
  private readonly now: () => number;
  private readonly log: FastifyBaseLogger | undefined;
  private readonly observer: UpstreamObserver | undefined;
  private turn = 0;

  constructor(registry: EngineRegistry, options: RouterOptions) {
    this.registry = registry;
    this.adapters = options.adapters;
    this.installationHasZones = options.installationHasZones;
    this.now = options.now ?? Date.now;
    this.log = options.log;
    this.observer = options.observer;
  }

  /** Runs `attempt` on the first machine that answers; `keepBusy` leaves the machine counted busy until `finish`. */
  async run<K extends Modality, T>(
    placement: Placement,
    modality: K,
    attempt: Attempt<K, T>,
    keepBusy = false,
  ): Promise<Routed<T>> {
    const zones = placement.zones === null ? null : new Set(placement.zones);
    const candidates = this.order(
      this.registry.candidates(placement.model, zones, placement.tier, modality),
      placement.preferFamily,
    );
    const trace = placement.trace;
    if (trace) {
      trace.model ??= placement.model;
      trace.tier ??= placement.tier;
    }
    const label = { model: placement.model, trace, placesTrace: true };
    return this.tryInTurn(candidates, modality, attempt, keepBusy, label, () => this.unavailable(placement));
  }

  /**
   * Runs `attempt` on the first of some machines that answers (machines found otherwise than by
   * model, such as the content checks of a zone); `unavailable` is thrown when none could be tried.
   * `about` names the work (for the log) and the request it is done for.
   */
  async runAmong<K extends Modality, T>(
    machines: Machine[],
    modality: K,
    attempt: Attempt<K, T>,
    unavailable: () => Error,
    about: { model: string; trace?: RequestTrace } = { model: "" },
  ): Promise<Routed<T>> {
    const label = { model: about.model, trace: about.trace, placesTrace: false };
    return this.tryInTurn(this.order(machines, undefined), modality, attempt, false, label, unavailable);
  }

  private async tryInTurn<K extends Modality, T>(
    candidates: Machine[],
    modality: K,
    attempt: Attempt<K, T>,
    keepBusy: boolean,
    label: RunLabel,
    unavailable: () => Error,
  ): Promise<Routed<T>> {
    if (candidates.length === 0) throw unavailable();
    let tried = 0;
    let onlyRefusals = true;
    let lastError: UpstreamError | undefined;
    for (const machine of candidates) {
      // A machine whose protocol cannot do this work is never a candidate for it.
      const engine = offered(this.adapters(machine.config.protocol), modality);
      if (!engine || !machine.breaker.tryAcquire(this.now())) continue;
      tried += 1;
      const stats = machine.stats;
      stats.inFlight += 1;
      let finished = false;
      const finish = () => {
        if (!finished) stats.inFlight -= 1;
        finished = true;
      };
      const started = performance.now();
      try {
        const result = await attempt(machine, engine);
        machine.breaker.success();
        this.answered(machine, label, performance.now() - started);
        if (!keepBusy) finish();
        return { zone: machine.config.zone, machine: machine.config.name, result, finish };
      } catch (error) {
        finish();
        if (!(error instanceof UpstreamError) || error.kind === "aborted") {
          machine.breaker.release();
          throw error;
        }
        // A 4xx is the request's fault (a file the machine cannot read, a prompt too long): the
        // machine answered, so it counts as up, and the next one is still tried.
        if (!error.retryable) machine.breaker.success();
        else machine.breaker.failure(this.now(), error.kind === "connect");
        this.failed(machine, label, performance.now() - started, error);
        onlyRefusals &&= error.kind === "connect";
        lastError = error;
      }
    }
    if (tried === 0 || onlyRefusals) throw unavailable();
    throw badGateway(
      lastError?.kind === "timeout"
        ? "No machine answered in time. Try again with growing pauses."
        : "No machine answered the request. Try again with growing pauses.",
    );
  }

  private answered(machine: Machine, label: RunLabel, ms: number): void {
    machine.stats.success(ms, this.now());
    this.place(machine, label, ms);
    this.observer?.attempt(attemptOf(machine, label, ms));
  }

  /** One failed attempt: the statistics, one warn line (without the engine's words), the observer. */
  private failed(machine: Machine, label: RunLabel, ms: number, error: UpstreamError): void {
    const failure = {
      kind: error.kind,
      ...(error.status !== undefined ? { status: error.status } : {}),
      message: error.message.slice(0, MESSAGE_LIMIT),
    };
    machine.stats.failure(failure, this.now());
    this.place(machine, label, ms);
    this.log?.warn(
      {
        ...(label.trace ? { request_id: label.trace.requestId } : {}),
        machine: machine.config.name,
        zone: machine.config.zone,
        model: label.model,
        ms: Math.round(ms),
        ...upstreamLogFields(error),
      },
      "upstream attempt failed",
    );
    this.observer?.attempt({ ...attemptOf(machine, label, ms), failure });
  }

  // The trace names the last machine tried: the one that answered, or the last that failed.
  private place(machine: Machine, label: RunLabel, ms: number): void {
    const trace = label.trace;
    if (!trace || !label.placesTrace) return;
    trace.machine = machine.config.name;
    trace.zone = machine.config.zone;
    trace.upstreamMs = Math.round(ms * 100) / 100;
  }

  private order(machines: Machine[], preferFamily: string | undefined): Machine[] {
    const now = this.now();
    this.turn = (this.turn + 1) % 1_000_000;
    const rotation = this.turn;
    return machines
      .map((machine, index) => ({ machine, index }))
      .sort((a, b) => rank(a.machine) - rank(b.machine) || a.index - b.index)
      .map((entry) => entry.machine);

    function rank(machine: Machine): number {
      const preferred = preferFamily !== undefined && machine.config.family === preferFamily;
      const health = machine.breaker.state(now) === "closed" ? 0 : 1;
      const load = machine.inFlight / machine.config.capacity;
      // Equal loads take turns, so idle machines share the work.
      const spread = ((machines.indexOf(machine) + rotation) % machines.length) / (machines.length * 1000);
      return (preferred ? 0 : 1_000_000) + health * 10_000 + load + spread;
    }
  }

  private unavailable(placement: Placement) {
    if (this.installationHasZones && placement.zones !== null)
      return zoneUnavailable(placement.model, placement.zones);
    return modelUnavailable(placement.model);
  }
}

function attemptOf(machine: Machine, label: RunLabel, ms: number): UpstreamAttempt {
  return {
    requestId: label.trace?.requestId,
    machine: machine.config.name,
    zone: machine.config.zone,
    protocol: machine.config.protocol,
    model: label.model,
    ms,
  };
}
