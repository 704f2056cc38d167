import type { ChatCall } from "../../../engines/types.ts";
import {
  type BodyOptions,
  chatModel,
  checkNames,
  FieldErrors,
  fieldsOf,
  given,
  readBoolean,
  readModel,
} from "./validate-common.ts";
import { checkImages } from "./validate-image.ts";
import { readMessages } from "./validate-messages.ts";
import {
  applyLocalServerRules,
  checkSamplingCombinations,
  readSampling,
  refuseOnLocalServer,
} from "./validate-sampling.ts";
import { readResponseFormat, readToolChoice, readTools } from "./validate-tools.ts";

/** A valid chat request: the call for the service and how to answer. */
export interface ValidChat {
  call: ChatCall;
  stream: boolean;
  /** `stream_options.include_usage`: forward the final usage chunk. */
  includeUsage: boolean;
}

const CHAT_NAMES: ReadonlySet<string> = new Set([
  "model",
  "messages",
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
  "top_logprobs",
  "parallel_tool_calls",
  "tools",
  "tool_choice",
  "response_format",
  "user",
  "service_tier",
  "stream",
  "stream_options",
]);

/** Parameters OpenAI has that are refused by name, with the reason given to the client. */
export const CHAT_REFUSED: ReadonlyMap<string, string> = new Map([
  ["metadata", "The 'metadata' parameter is not supported: this service stores no completions."],
  ["store", "The 'store' parameter is not supported: this service stores no completions."],
  ["functions", "The 'functions' parameter is not supported; describe functions in 'tools'."],
  ["function_call", "The 'function_call' parameter is not supported; use 'tool_choice'."],
  ["modalities", "The 'modalities' parameter is not supported: answers are text only."],
  ["audio", "The 'audio' parameter is not supported: answers are text only."],
  ["prediction", "The 'prediction' parameter (predicted outputs) is not supported."],
  [
    "web_search_options",
    "The 'web_search_options' parameter is not supported: models here do not search the web.",
  ],
]);

/**
 * Validates a `POST /v1/chat/completions` body (docs/text-api.md#chat-completions) and throws the
 * ApiError a client should see first:
 *
 * 1. a body that is not JSON (read as a form or as empty): 422 for the fields at fault, before any name check;
 * 2. a refused or unknown name, in the client's order: 400 naming it;
 * 3. local-model-server models: 400 for `n` above 1, `logprobs`, `top_logprobs`, `logit_bias`,
 *    `parallel_tool_calls`, whatever their values (so before the range and dependency checks);
 * 4. missing, mistyped or out-of-range values: 422 listing every field at fault;
 * 5. `service_tier` other than auto/default, `n` above 1 with `stream`: 400;
 * 6. the model: 404 `model_not_found` when not in the catalogue, 400 when not a chat model;
 * 7. images: 400 on a model without vision, or for an unacceptable image.
 *
 * The call carries only honoured parameters: `max_completion_tokens` becomes `max_tokens`;
 * `logprobs`/`top_logprobs` are dropped with `stream: true`, `tool_choice` on local-model-server models;
 * `service_tier`, `stream` and `stream_options` stay with the route.
 */
export function validateChat(body: unknown, options: BodyOptions): ValidChat {
  const fields = fieldsOf(body);
  const errors = new FieldErrors();
  const model = readModel(errors, fields);
  const messages = readMessages(errors, given(fields, "messages"));
  const sampling = readSampling(fields, errors, "chat");
  const params = sampling.params;
  const tools = readTools(errors, given(fields, "tools"));
  const extras = {
    tools,
    tool_choice: readToolChoice(errors, given(fields, "tool_choice"), tools),
    parallel_tool_calls: readBoolean(errors, "parallel_tool_calls", given(fields, "parallel_tool_calls")),
    response_format: readResponseFormat(errors, "response_format", given(fields, "response_format")),
  };
  for (const [name, value] of Object.entries(extras)) if (value !== undefined) params[name] = value;
  if (params.top_logprobs !== undefined && params.logprobs !== true && !sampling.stream) {
    errors.add("top_logprobs", "The top_logprobs field needs logprobs to be true.");
  }

  if (!options.json) errors.throwValidation();
  checkNames(fields, CHAT_NAMES, CHAT_REFUSED);
  refuseOnLocalServer(fields, options.catalogue, model);
  errors.throwValidation();
  checkSamplingCombinations(fields, sampling);
  if (model === undefined || messages === undefined) throw new Error("validated fields missing");
  const entry = chatModel(options.catalogue, model);
  checkImages(messages.images, entry);
  if (sampling.stream) {
    // Accepted with no effect: a stream carries no log probabilities.
    delete params.logprobs;
    delete params.top_logprobs;
  }
  if (entry.local_server) applyLocalServerRules(params, entry.id);
  return {
    call: { model: entry.id, messages: messages.messages, params },
    stream: sampling.stream,
    includeUsage: sampling.includeUsage,
  };
}
