import type { VideoSize } from "../../../engines/types.ts";
import { invalidRequest, unknownParameter, unsupportedParameter } from "../../../errors/catalogue.ts";
import type { VideoRequest } from "../../../services/videos/video-request.ts";

/** Longest prompt, in characters. */
export const VIDEO_PROMPT_MAX_CHARACTERS = 2000;
/** The sizes a clip can have; the first is the default. */
export const VIDEO_SIZES: readonly VideoSize[] = ["1280x704", "704x1280"];
/** The lengths a clip can have, in seconds; the first is the default. */
export const VIDEO_SECONDS: readonly number[] = [5];
/** Highest seed. */
export const VIDEO_MAX_SEED = 2_147_483_647;

const FIELDS = new Set(["prompt", "model", "seconds", "size", "seed"]);

/** The fields of a request: a JSON object's, or a form's (every value a string, possibly repeated). */
export type VideoFields = Record<string, unknown>;

/**
 * Validates `POST /v1/videos`, from a JSON body or a multipart form (the official SDKs
 * send a form, so numbers may arrive as strings): `prompt` required, at most 2,000 characters;
 * `seconds` 5; `size` 1280x704 or 704x1280 (never rounded); `seed` 0 to 2147483647;
 * `input_reference` refused (videos are made from a prompt alone) and every other field 400
 * `unknown_parameter` naming it. A null field counts as absent. Whether the model exists is the
 * service's to say.
 */
export function validateVideoRequest(fields: VideoFields): VideoRequest {
  for (const name of Object.keys(fields)) {
    if (name === "input_reference") {
      throw unsupportedParameter(
        name,
        "'input_reference' is not supported: videos are made from the prompt alone.",
      );
    }
    if (!FIELDS.has(name)) throw unknownParameter(name);
    if (Array.isArray(fields[name])) throw invalid(name, `'${name}' was given more than once.`);
  }
  const prompt = promptOf(fields.prompt);
  const model = optional(fields, "model");
  if (model !== undefined && (typeof model !== "string" || model === "")) {
    throw invalid("model", "'model' must be the name of a video model, such as wan-2.2-5b-fast.");
  }
  const seconds = integerOf(fields, "seconds") ?? VIDEO_SECONDS[0];
  if (seconds === undefined || !VIDEO_SECONDS.includes(seconds)) {
    throw invalid(
      "seconds",
      `'seconds' must be ${VIDEO_SECONDS.join(" or ")}: the model makes clips of that length only.`,
    );
  }
  const size = optional(fields, "size") ?? VIDEO_SIZES[0];
  if (!VIDEO_SIZES.includes(size as VideoSize)) {
    throw invalid("size", `'size' must be one of ${VIDEO_SIZES.join(", ")}; other sizes are not made.`);
  }
  const seed = integerOf(fields, "seed");
  if (seed !== undefined && (seed < 0 || seed > VIDEO_MAX_SEED)) {
    throw invalid("seed", `'seed' must be a whole number from 0 to ${VIDEO_MAX_SEED}.`);
  }
  return {
    prompt,
    ...(model !== undefined ? { model: model as string } : {}),
    seconds,
    size: size as VideoSize,
    ...(seed !== undefined ? { seed } : {}),
  };
}

function promptOf(value: unknown): string {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) {
    throw invalidRequest("'prompt' is required: describe the video to make.", {
      param: "prompt",
      code: "missing_required_parameter",
    });
  }
  if (typeof value !== "string") throw invalid("prompt", "'prompt' must be a string.");
  if ([...value].length > VIDEO_PROMPT_MAX_CHARACTERS) throw videoPromptTooLong();
  return value;
}

/** 400 `string_above_max_length` for a prompt over 2,000 characters. */
export function videoPromptTooLong() {
  return invalidRequest(`'prompt' must be at most ${VIDEO_PROMPT_MAX_CHARACTERS} characters.`, {
    param: "prompt",
    code: "string_above_max_length",
  });
}

function optional(fields: VideoFields, name: string): unknown {
  const value = fields[name];
  return value === null ? undefined : value;
}

/** A whole number given as a number or as decimal digits (a form's, or the SDK's string `seconds`). */
function integerOf(fields: VideoFields, name: string): number | undefined {
  const value = optional(fields, name);
  if (value === undefined) return undefined;
  const number = typeof value === "string" && /^\d{1,10}$/.test(value.trim()) ? Number(value.trim()) : value;
  if (typeof number !== "number" || !Number.isInteger(number)) {
    throw invalid(name, `'${name}' must be a whole number.`);
  }
  return number;
}

function invalid(param: string, message: string) {
  return invalidRequest(message, { param, code: "invalid_value" });
}
