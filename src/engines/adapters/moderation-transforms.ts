/**
 * Pure translations for OpenAI-style `/v1/moderations` servers: one input (a text, or a picture in
 * the multi-modal shape) in, the first result's `flagged` and the names of its categories that are
 * true out.
 */
import { upstreamModel } from "../served-models.ts";
import type { MachineConfig, ModerationVerdict } from "../types.ts";
import { UpstreamError } from "../types.ts";
import { expectPayload, isPayload, type Payload, throwIfErrorPayload } from "./payload.ts";

/**
 * The body of `POST /v1/moderations`: `model` (the engine's name for the machine's first model)
 * only when the machine names one (many servers serve one).
 */
export function moderationRequest(machine: MachineConfig, input: string | Payload[]): Payload {
  const model = machine.models[0];
  return model === undefined ? { input } : { input, model: upstreamModel(machine, model) };
}

/** The multi-modal input of a picture check: the PNG as a data URL (OpenAI's `omni-moderation` shape). */
export function imageModerationInput(png: Buffer): Payload[] {
  return [{ type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } }];
}

/** The verdict of a moderation answer; a missing result or `flagged` is a `protocol` failure. */
export function fromModeration(raw: unknown): ModerationVerdict {
  if (isPayload(raw)) throwIfErrorPayload(raw);
  const body = expectPayload(raw, "a moderation answer");
  const first: unknown = Array.isArray(body.results) ? body.results[0] : undefined;
  const result = isPayload(first) ? first : undefined;
  if (result === undefined || typeof result.flagged !== "boolean") {
    throw new UpstreamError("protocol", "the upstream sent a moderation answer without a result");
  }
  const categories = isPayload(result.categories)
    ? Object.entries(result.categories)
        .filter(([, value]) => value === true)
        .map(([name]) => name)
    : [];
  return { flagged: result.flagged, categories };
}
