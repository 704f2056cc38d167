import type { EngineRegistry } from "../../engines/registry.ts";
import type { Router } from "../../engines/router.ts";
import { type ModerationVerdict, UpstreamError } from "../../engines/types.ts";
import { ApiError, inputRefused, moderationUnavailable } from "../../http/errors.ts";
import type { RequestTrace } from "../../http/request-trace.ts";

/** What a zone does with texts before they are read aloud (config `installation.content_checks`). */
export type ContentPolicy = "moderation" | "none";

/**
 * The content check of speech (and later pictures), decided zone by zone: a zone whose policy is
 * `moderation` (every zone not configured otherwise) asks one of its `moderation` machines; a
 * flagged text is 400 `input_refused`, and a check that cannot answer (no such machine, or none
 * answered) is 503 `moderation_unavailable`. Either way nothing is generated.
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

  /** Resolves when the text may be used in the zone; throws the spec's 400 or 503 otherwise. */
  async check(
    text: string,
    zone: string,
    signal: AbortSignal,
    param = "input",
    trace?: RequestTrace,
  ): Promise<void> {
    if (this.policy(zone) === "none") return;
    const machines = this.registry.ofProtocol("moderation", new Set([zone]));
    let verdict: ModerationVerdict;
    try {
      const routed = await this.router.runAmong(
        machines,
        (machine, adapter) => {
          if (!adapter.moderate)
            throw new UpstreamError("protocol", "this machine's protocol cannot check texts");
          return adapter.moderate(machine.config, text, signal);
        },
        () => moderationUnavailable(),
        { model: "moderation", ...(trace ? { trace } : {}) },
      );
      verdict = routed.result;
    } catch (error) {
      if (signal.aborted || !(error instanceof ApiError || error instanceof UpstreamError)) throw error;
      throw moderationUnavailable();
    }
    if (verdict.flagged) throw inputRefused(param);
  }
}
