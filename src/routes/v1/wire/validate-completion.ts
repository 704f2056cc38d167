import type { CompletionCall } from "../../../engines/types.ts";
import { invalidRequest } from "../../../errors/catalogue.ts";
import { CHAT_REFUSED } from "./validate-chat.ts";
import {
  type BodyOptions,
  chatModel,
  checkNames,
  FieldErrors,
  type Fields,
  fieldsOf,
  given,
  readModel,
} from "./validate-common.ts";
import {
  applyLocalServerRules,
  checkSamplingCombinations,
  readSampling,
  refuseOnLocalServer,
} from "./validate-sampling.ts";

/** A valid text-completion request: the call for the service and how to answer. */
export interface ValidCompletion {
  call: CompletionCall;
  stream: boolean;
  includeUsage: boolean;
}

// The chat parameters without messages and tools;
// `logprobs` is the completions count (0 to 5), as OpenAI has it.
const COMPLETION_NAMES: ReadonlySet<string> = new Set([
  "model",
  "prompt",
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
  "stop",
  "n",
  "seed",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "user",
  "service_tier",
  "stream",
  "stream_options",
]);

/**
 * Validates a `POST /v1/completions` body, in the order of validateChat. `prompt` is a string or
 * a list with exactly one string: a longer list is a 400 naming `prompt` (after the 422 checks);
 * anything else (token ids, an empty list) is a 422.
 */
export function validateCompletion(body: unknown, options: BodyOptions): ValidCompletion {
  const fields = fieldsOf(body);
  const errors = new FieldErrors();
  const model = readModel(errors, fields);
  const prompt = readPrompt(errors, fields);
  const sampling = readSampling(fields, errors, "completion");
  const params = sampling.params;

  if (!options.json) errors.throwValidation();
  checkNames(fields, COMPLETION_NAMES, CHAT_REFUSED);
  refuseOnLocalServer(fields, options.catalogue, model);
  errors.throwValidation();
  if (prompt === "several") {
    throw invalidRequest(
      "The prompt must be one string (or a list with one string); send one request per prompt.",
      {
        param: "prompt",
        code: "invalid_value",
      },
    );
  }
  checkSamplingCombinations(fields, sampling);
  if (model === undefined || prompt === undefined) throw new Error("validated fields missing");
  const entry = chatModel(options.catalogue, model);
  if (sampling.stream) delete params.logprobs;
  if (entry.local_server) applyLocalServerRules(params, entry.id);
  return {
    call: { model: entry.id, prompt: prompt.text, params },
    stream: sampling.stream,
    includeUsage: sampling.includeUsage,
  };
}

function readPrompt(errors: FieldErrors, fields: Fields): { text: string } | "several" | undefined {
  const value = given(fields, "prompt");
  if (value === undefined) {
    errors.add("prompt", "The prompt field is required.");
    return undefined;
  }
  if (typeof value === "string") return { text: value };
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
    if (value.length > 1) return "several";
    const [only] = value as string[];
    if (only !== undefined) return { text: only };
  }
  errors.add("prompt", "The prompt field must be a string or a list with one string.");
  return undefined;
}
