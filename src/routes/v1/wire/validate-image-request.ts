import type { ImageSize } from "../../../engines/types.ts";
import { invalidRequest, unknownParameter } from "../../../errors/catalogue.ts";
import type { ImageRequest } from "../../../services/images/image-request.ts";
import type { Fields } from "../../wire/fields.ts";

/** Longest prompt, in characters. */
export const IMAGE_PROMPT_MAX_CHARACTERS = 4000;
/** The sizes a picture can have; the first is the default. */
export const IMAGE_SIZES: readonly ImageSize[] = ["1024x1024", "1024x1536", "1536x1024"];
/** Most pictures per request. */
export const IMAGE_MAX_N = 4;
/** Highest seed. */
export const IMAGE_MAX_SEED = 2_147_483_647;

const FIELDS = new Set(["prompt", "model", "size", "n", "response_format", "seed"]);

/**
 * Validates the JSON body of `POST /v1/images/generations`: every field but the six below is 400
 * `unknown_parameter` naming it; `prompt` required and at most 4,000
 * characters; `size` one of three (never rounded); `n` 1 to 4; `response_format` `b64_json` or
 * `url`; `seed` 0 to 2147483647. A null field counts as absent. A body that is not JSON was read
 * as empty, so it is a missing prompt. Whether the model exists is the service's to say.
 */
export function validateImageRequest(body: unknown): ImageRequest {
  if (Array.isArray(body)) throw invalidRequest("The request body must be a JSON object.");
  const fields: Fields = typeof body === "object" && body !== null ? (body as Fields) : {};
  for (const name of Object.keys(fields)) if (!FIELDS.has(name)) throw unknownParameter(name);
  const prompt = promptOf(fields.prompt);
  const model = optional(fields, "model");
  if (model !== undefined && (typeof model !== "string" || model === "")) {
    throw invalid("model", "'model' must be the name of an image model, such as z-image-turbo.");
  }
  const size = optional(fields, "size") ?? IMAGE_SIZES[0];
  if (!IMAGE_SIZES.includes(size as ImageSize)) {
    throw invalid("size", `'size' must be one of ${IMAGE_SIZES.join(", ")}; other sizes are not made.`);
  }
  const n = integerOf(fields, "n", 1, IMAGE_MAX_N) ?? 1;
  const responseFormat = optional(fields, "response_format") ?? "b64_json";
  if (responseFormat !== "b64_json" && responseFormat !== "url") {
    throw invalid("response_format", "'response_format' must be b64_json or url.");
  }
  const seed = integerOf(fields, "seed", 0, IMAGE_MAX_SEED);
  return {
    prompt,
    ...(model !== undefined ? { model: model as string } : {}),
    size: size as ImageSize,
    n,
    responseFormat,
    ...(seed !== undefined ? { seed } : {}),
  };
}

function promptOf(value: unknown): string {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) {
    throw invalidRequest("'prompt' is required: describe the picture to make.", {
      param: "prompt",
      code: "missing_required_parameter",
    });
  }
  if (typeof value !== "string") throw invalid("prompt", "'prompt' must be a string.");
  if ([...value].length > IMAGE_PROMPT_MAX_CHARACTERS) {
    throw invalidRequest(`'prompt' must be at most ${IMAGE_PROMPT_MAX_CHARACTERS} characters.`, {
      param: "prompt",
      code: "string_above_max_length",
    });
  }
  return value;
}

function optional(fields: Fields, name: string): unknown {
  const value = fields[name];
  return value === null ? undefined : value;
}

function integerOf(fields: Fields, name: string, min: number, max: number): number | undefined {
  const value = optional(fields, name);
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(name, `'${name}' must be a whole number from ${min} to ${max}.`);
  }
  return value;
}

function invalid(param: string, message: string) {
  return invalidRequest(message, { param, code: "invalid_value" });
}
