import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config/schema.ts";
import { describeChanges, keepRestartOnly } from "./config-changes.ts";
import { replaceEngineServices, type Services } from "./create-services.ts";

/** What one reload did. */
export interface ReloadOutcome {
  applied: boolean;
  /** Why nothing was applied (the file is unreadable or invalid). */
  error?: string;
  /** What changed for new requests, one phrase each (`machine vllm-2 added`, `prices`...). */
  changes: string[];
  /** Options that changed in the file but only take effect after a restart. */
  restartRequired: string[];
}

/**
 * Re-reads the configuration (SIGHUP, `POST /admin/v1/reload`) and, when the whole file is valid,
 * puts machines, models, prices, zones and limits in force for new requests; requests in flight
 * finish on the services they started with. A bad file changes nothing and says why.
 */
export class ConfigReloader {
  private readonly services: Services;
  private readonly load: () => Config;
  private readonly log: FastifyBaseLogger;
  private readonly afterApply: ((config: Config) => void) | undefined;
  // One reload at a time: a second signal waits for the first to end.
  private queue: Promise<unknown> = Promise.resolve();
  private probing = false;

  constructor(deps: {
    services: Services;
    /** Reads and validates the configuration as at start (file and environment). */
    load: () => Config;
    log: FastifyBaseLogger;
    /** Runs after a configuration is applied (the machines' start-up check). */
    afterApply?: (config: Config) => void;
  }) {
    this.services = deps.services;
    this.load = deps.load;
    this.log = deps.log;
    this.afterApply = deps.afterApply;
  }

  /**
   * Once the server listens: starts the health probes and the start-up check of the machines,
   * which then run again after every reload.
   */
  startBackground(): void {
    this.probing = true;
    this.services.health.start();
    this.afterApply?.(this.services.config);
  }

  /** Reloads once the reloads before it have ended. */
  reload(trigger: string): Promise<ReloadOutcome> {
    const next = this.queue.then(() => this.apply(trigger));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private apply(trigger: string): ReloadOutcome {
    let read: Config;
    try {
      read = this.load();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.log.warn({ trigger, reason: message }, "configuration not reloaded: nothing changed");
      return { applied: false, error: message, changes: [], restartRequired: [] };
    }
    const current = this.services.config;
    const { config, restartRequired } = keepRestartOnly(current, read);
    const changes = describeChanges(current, config);
    const replaced = replaceEngineServices(this.services, config);
    replaced.health.stop();
    if (this.probing) this.services.health.start();
    this.log.info(
      { trigger, changes, ...(restartRequired.length ? { restart_required: restartRequired } : {}) },
      changes.length ? "configuration reloaded" : "configuration reloaded: no change",
    );
    this.afterApply?.(config);
    return { applied: true, changes, restartRequired };
  }
}
