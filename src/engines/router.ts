import type { TierName } from "../config/schema.ts";
import { badGateway, modelUnavailable, zoneUnavailable } from "../http/errors.ts";
import type { AdapterLookup } from "./adapters/index.ts";
import type { EngineRegistry, Machine } from "./registry.ts";
import { type EngineAdapter, UpstreamError } from "./types.ts";

/** Where a request may run and what it prefers. */
export interface Placement {
  model: string;
  /** Zones the request may run in; null: any machine (embeddings and rerank have no zone selection). */
  zones: string[] | null;
  tier: TierName;
  /** A machine family to try first (the app API's `backend`). */
  preferFamily?: string;
}

/** What one machine answered. `finish` marks the machine free again (streams call it at their end). */
export interface Routed<T> {
  zone: string;
  machine: string;
  result: T;
  finish(): void;
}

/** Tries one machine; throws an UpstreamError to move on to the next. */
export type Attempt<T> = (machine: Machine, adapter: EngineAdapter) => Promise<T>;

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
  private turn = 0;

  constructor(
    registry: EngineRegistry,
    options: { adapters: AdapterLookup; installationHasZones: boolean; now?: () => number },
  ) {
    this.registry = registry;
    this.adapters = options.adapters;
    this.installationHasZones = options.installationHasZones;
    this.now = options.now ?? Date.now;
  }

  /** Runs `attempt` on the first machine that answers; `keepBusy` leaves the machine counted busy until `finish`. */
  async run<T>(placement: Placement, attempt: Attempt<T>, keepBusy = false): Promise<Routed<T>> {
    const zones = placement.zones === null ? null : new Set(placement.zones);
    const candidates = this.order(
      this.registry.candidates(placement.model, zones, placement.tier),
      placement.preferFamily,
    );
    return this.tryInTurn(candidates, attempt, keepBusy, () => this.unavailable(placement));
  }

  /**
   * Runs `attempt` on the first of some machines that answers (machines found otherwise than by
   * model, such as the content checks of a zone); `unavailable` is thrown when none could be tried.
   */
  async runAmong<T>(machines: Machine[], attempt: Attempt<T>, unavailable: () => Error): Promise<Routed<T>> {
    return this.tryInTurn(this.order(machines, undefined), attempt, false, unavailable);
  }

  private async tryInTurn<T>(
    candidates: Machine[],
    attempt: Attempt<T>,
    keepBusy: boolean,
    unavailable: () => Error,
  ): Promise<Routed<T>> {
    if (candidates.length === 0) throw unavailable();
    let tried = 0;
    let onlyRefusals = true;
    let lastError: UpstreamError | undefined;
    for (const machine of candidates) {
      const adapter = this.adapters(machine.config.protocol);
      if (!adapter || !machine.breaker.tryAcquire(this.now())) continue;
      tried += 1;
      machine.inFlight += 1;
      let finished = false;
      const finish = () => {
        if (!finished) machine.inFlight -= 1;
        finished = true;
      };
      try {
        const result = await attempt(machine, adapter);
        machine.breaker.success();
        if (!keepBusy) finish();
        return { zone: machine.config.zone, machine: machine.config.name, result, finish };
      } catch (error) {
        finish();
        if (!(error instanceof UpstreamError) || error.kind === "aborted") throw error;
        // A 4xx is the request's fault (a file the machine cannot read, a prompt too long): the
        // machine answered, so it counts as up, and the next one is still tried.
        if (!error.retryable) machine.breaker.success();
        else machine.breaker.failure(this.now(), error.kind === "connect");
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
