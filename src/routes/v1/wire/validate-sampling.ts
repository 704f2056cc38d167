import {
  type ApiError,
  invalidRequest,
  unsupportedParameter,
  unsupportedValue,
} from "../../../errors/catalogue.ts";
import {
  type FieldErrors,
  type Fields,
  given,
  isObject,
  type ModelLookup,
  readBoolean,
  readNumber,
  readString,
  say,
} from "./validate-common.ts";

/** The ceiling of `max_tokens` (and `max_completion_tokens`, `max_output_tokens`). */
export const MAX_OUTPUT_TOKENS = 8192;
/** Chat `n`: 1 to 8. */
export const MAX_CHOICES = 8;
// OpenAI's own limits, so that what passes here also passes an OpenAI-compatible upstream.
const MAX_STOP_SEQUENCES = 4;
const MAX_TOP_LOGPROBS = 20;
const MAX_COMPLETION_LOGPROBS = 5;

const LOCAL_REFUSED: readonly string[] = [
  "n",
  "logprobs",
  "top_logprobs",
  "logit_bias",
  "parallel_tool_calls",
];

/** `service_tier` values accepted; the tier itself comes from `X-Service-Tier`. */
const SERVICE_TIERS = ["auto", "default"] as const;

/** The parameters chat completions and completions share, read from the body. */
export interface SamplingValues {
  /** Honoured parameters under their OpenAI names, only those given; `max_completion_tokens` is `max_tokens`. */
  params: Record<string, unknown>;
  stream: boolean;
  includeUsage: boolean;
}

/**
 * Reads the parameters both text endpoints share (422 errors collected in `errors`). `logprobs` is a
 * boolean on chat and a count (0 to 5) on completions, as OpenAI has them.
 */
export function readSampling(
  fields: Fields,
  errors: FieldErrors,
  kind: "chat" | "completion",
): SamplingValues {
  const params: Record<string, unknown> = {};
  const put = (name: string, value: unknown) => {
    if (value !== undefined) params[name] = value;
  };
  put("temperature", readNumber(errors, "temperature", given(fields, "temperature"), { min: 0, max: 2 }));
  put("top_p", readNumber(errors, "top_p", given(fields, "top_p"), { min: 0, max: 1 }));
  const tokenRange = { min: 1, max: MAX_OUTPUT_TOKENS, integer: true };
  const maxTokens = readNumber(errors, "max_tokens", given(fields, "max_tokens"), tokenRange);
  const maxCompletionTokens = readNumber(
    errors,
    "max_completion_tokens",
    given(fields, "max_completion_tokens"),
    tokenRange,
  );
  // Like vLLM, the newer name wins when a client sends both.
  put("max_tokens", maxCompletionTokens ?? maxTokens);
  put("stop", readStop(errors, given(fields, "stop")));
  put("n", readNumber(errors, "n", given(fields, "n"), { min: 1, max: MAX_CHOICES, integer: true }));
  put(
    "seed",
    readNumber(errors, "seed", given(fields, "seed"), {
      integer: true,
      min: Number.MIN_SAFE_INTEGER,
      max: Number.MAX_SAFE_INTEGER,
    }),
  );
  for (const name of ["presence_penalty", "frequency_penalty"]) {
    put(name, readNumber(errors, name, given(fields, name), { min: -2, max: 2 }));
  }
  put("logit_bias", readLogitBias(errors, given(fields, "logit_bias")));
  if (kind === "chat") {
    put("logprobs", readBoolean(errors, "logprobs", given(fields, "logprobs")));
    put(
      "top_logprobs",
      readNumber(errors, "top_logprobs", given(fields, "top_logprobs"), {
        min: 0,
        max: MAX_TOP_LOGPROBS,
        integer: true,
      }),
    );
  } else {
    put(
      "logprobs",
      readNumber(errors, "logprobs", given(fields, "logprobs"), {
        min: 0,
        max: MAX_COMPLETION_LOGPROBS,
        integer: true,
      }),
    );
  }
  put("user", readString(errors, "user", given(fields, "user")));
  const stream = readBoolean(errors, "stream", given(fields, "stream")) ?? false;
  const includeUsage = readStreamOptions(errors, given(fields, "stream_options"));
  return { params, stream, includeUsage };
}

/**
 * The 400 refusals of values that are valid on their own, checked once the 422 checks passed:
 * `service_tier` other than `auto` or `default`, and `n` above 1 with `stream: true`.
 */
export function checkSamplingCombinations(fields: Fields, values: SamplingValues): void {
  const tier = given(fields, "service_tier");
  if (tier !== undefined && !SERVICE_TIERS.includes(tier as (typeof SERVICE_TIERS)[number])) {
    throw invalidRequest(
      `Invalid value for 'service_tier': use 'auto' or 'default'; choose the tier with the X-Service-Tier header.`,
      { param: "service_tier", code: "invalid_value" },
    );
  }
  const n = values.params.n;
  if (values.stream && typeof n === "number" && n > 1) {
    throw unsupportedValue(
      "n",
      "'n' above 1 is not supported with 'stream': true. Send n: 1, or do not stream.",
    );
  }
}

/**
 * The refusals of models served by a local-model server (`n` above 1, `logprobs`,
 * `top_logprobs`, `logit_bias`, `parallel_tool_calls`), read from the body as sent so that they come
 * before the range and dependency checks: `top_logprobs` alone, or `n: 50`, is a 400 naming the field,
 * not a 422. `logprobs` and `top_logprobs` with `stream: true` are accepted (they have no effect there).
 * The first refused name in the client's order is named; other models, and unknown ones, pass.
 */
export function refuseOnLocalServer(fields: Fields, catalogue: ModelLookup, model: string | undefined): void {
  const entry = model === undefined ? undefined : catalogue.find(model);
  if (entry?.kind !== "chat" || !entry.local_server) return;
  const streamed = given(fields, "stream") === true;
  for (const name of Object.keys(fields)) {
    const value = given(fields, name);
    if (value === undefined || !LOCAL_REFUSED.includes(name)) continue;
    if (name === "n") {
      if (typeof value === "number" && value > 1) throw localRefusal(name, entry.id);
    } else if (!(streamed && (name === "logprobs" || name === "top_logprobs"))) {
      throw localRefusal(name, entry.id);
    }
  }
}

/**
 * What is left of the local-model-server rules once the body passed refuseOnLocalServer: refuses what
 * is still in `params` (for callers without the body's order) and drops `tool_choice` (accepted, no effect).
 */
export function applyLocalServerRules(params: Record<string, unknown>, model: string): void {
  for (const name of LOCAL_REFUSED) {
    const value = params[name];
    if (value === undefined || (name === "n" && !(typeof value === "number" && value > 1))) continue;
    throw localRefusal(name, model);
  }
  delete params.tool_choice;
}

function localRefusal(name: string, model: string): ApiError {
  return name === "n"
    ? unsupportedValue("n", `'n' above 1 is not supported by the model '${model}' (a local-model server).`)
    : unsupportedParameter(
        name,
        `The '${name}' parameter is not supported by the model '${model}' (a local-model server).`,
      );
}

function readStop(errors: FieldErrors, value: unknown): string | string[] | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
    if (value.length > MAX_STOP_SEQUENCES) {
      errors.add("stop", `The stop field must not have more than ${MAX_STOP_SEQUENCES} items.`);
      return undefined;
    }
    return value as string[];
  }
  errors.add("stop", "The stop field must be a string or an array of strings.");
  return undefined;
}

function readLogitBias(errors: FieldErrors, value: unknown): Record<string, number> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    errors.add("logit_bias", say.object("logit_bias"));
    return undefined;
  }
  for (const [token, bias] of Object.entries(value)) {
    if (!/^\d+$/.test(token)) {
      errors.add("logit_bias", "The logit_bias field must map token ids to numbers.");
      return undefined;
    }
    if (typeof bias !== "number" || !Number.isFinite(bias) || bias < -100 || bias > 100) {
      errors.add("logit_bias", `The logit_bias value of token ${token} must be between -100 and 100.`);
      return undefined;
    }
  }
  return value as Record<string, number>;
}

function readStreamOptions(errors: FieldErrors, value: unknown): boolean {
  if (value === undefined) return false;
  if (!isObject(value)) {
    errors.add("stream_options", say.object("stream_options"));
    return false;
  }
  return readBoolean(errors, "stream_options.include_usage", given(value, "include_usage")) ?? false;
}
