import type { Modalities } from "../../engines/modalities.ts";
import type { EngineRegistry } from "../../engines/registry.ts";
import type { Router } from "../../engines/router.ts";
import { type MachineConfig, type ModerationVerdict, UpstreamError } from "../../engines/types.ts";
import { ApiError } from "../../errors/catalogue.ts";
import { inputRefused, moderationUnavailable, promptRefused } from "../../errors/media-errors.ts";
import type { RequestTrace } from "../../trace/request-trace.ts";

/** What a zone does with texts before they are read aloud (config `installation.content_checks`). */
export type ContentPolicy = "moderation" | "none";

type Ask<K extends "moderation" | "imageModeration"> = (
  engine: Modalities[K],
  machine: MachineConfig,
) => Promise<ModerationVerdict>;

/**
 * The content check of speech and pictures, decided zone by zone: a zone whose policy is
 * `moderation` (every zone not configured otherwise) asks one of its `moderation` machines; a
 * flagged text is 400 (`input_refused`, `prompt_refused`), and a check that cannot answer (no such
 * machine, or none answered) is 503 `moderation_unavailable`. Either way nothing is generated.
 */
export class ContentCheck {
  private readonly router: Router;
  private readonly registry: EngineRegistry;
  private readonly policies: Record<string, ContentPolicy>;

  constructor(deps: { router: Router; registry: EngineRegistry; policies: Record<string, ContentPolicy> }) {
    this.router = deps.router;
    this.registry = deps.registry;
    this.policies = deps.policies;
  }

  /** The policy of a zone. */
  policy(zone: string): ContentPolicy {
    return this.policies[zone] ?? "moderation";
  }

  /**
   * Resolves when the text may be used in the zone; throws 400 `input_refused` or 503
   * `moderation_unavailable` otherwise.
   */
  async check(
    text: string,
    zone: string,
    signal: AbortSignal,
    param = "input",
    trace?: RequestTrace,
  ): Promise<void> {
    const verdict = await this.ask(zone, signal, trace, "nothing was read", "moderation", (engine, machine) =>
      engine.moderate(machine, text, signal),
    );
    if (verdict?.flagged) throw inputRefused(param);
  }

  /**
   * Resolves when a prompt (of a picture or a video) may be made in the zone; 400 `prompt_refused`
   * with the categories, or 503. `outcome` says what was not done, for the messages.
   */
  async checkPrompt(
    prompt: string,
    zone: string,
    signal: AbortSignal,
    trace?: RequestTrace,
    outcome = "no picture was made",
  ): Promise<void> {
    const verdict = await this.ask(zone, signal, trace, outcome, "moderation", (engine, machine) =>
      engine.moderate(machine, prompt, signal),
    );
    if (verdict?.flagged) throw promptRefused(verdict.categories, outcome);
  }

  /** Whether a picture (PNG) made in the zone may be delivered; throws 503 when the check cannot answer. */
  async pictureAllowed(
    png: Buffer,
    zone: string,
    signal: AbortSignal,
    trace?: RequestTrace,
  ): Promise<boolean> {
    const verdict = await this.ask(
      zone,
      signal,
      trace,
      "no picture was delivered",
      "imageModeration",
      (engine, machine) => engine.moderateImage(machine, png, signal),
    );
    return !verdict?.flagged;
  }

  /** The verdict of the zone's check; undefined when the zone checks nothing. */
  private async ask<K extends "moderation" | "imageModeration">(
    zone: string,
    signal: AbortSignal,
    trace: RequestTrace | undefined,
    outcome: string,
    modality: K,
    ask: Ask<K>,
  ): Promise<ModerationVerdict | undefined> {
    if (this.policy(zone) === "none") return undefined;
    const machines = this.registry.ofProtocol("moderation", new Set([zone]));
    try {
      const routed = await this.router.runAmong(
        machines,
        modality,
        (machine, engine) => ask(engine, machine.config),
        () => moderationUnavailable(outcome),
        { model: "moderation", ...(trace ? { trace } : {}) },
      );
      return routed.result;
    } catch (error) {
      if (signal.aborted || !(error instanceof ApiError || error instanceof UpstreamError)) throw error;
      throw moderationUnavailable(outcome);
    }
  }
}
