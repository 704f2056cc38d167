import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { ChatCompletion } from "../../engines/types.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import { generationContext } from "./text-context.ts";
import { type ValidResponses, validateResponses } from "./wire/validate-responses.ts";

/**
 * `POST /v1/responses`: the honoured subset of the Responses API, answered (never streamed) through
 * the chat service, in the Responses object shape the official SDKs parse.
 */
export async function responsesRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post("/responses", { config: endpointLimit("responses") }, async (request, reply) => {
    const valid = validateResponses(request.body, services.catalogue);
    const { context } = generationContext(request, reply, "responses");
    const placed = await services.text.chat(valid.call, context);
    return reply.header("x-zona", placed.zone).send(responseObject(placed.result, valid));
  });
}

/**
 * A chat completion as a Responses API object: the answer's text as a `message` item with one
 * `output_text` part, each tool call as a `function_call` item; `status` is `incomplete` (reason
 * `max_output_tokens`) when the answer was cut at the token limit.
 */
export function responseObject(completion: ChatCompletion, valid: ValidResponses): Record<string, unknown> {
  const choice = completion.choices[0];
  const cut = choice?.finish_reason === "length";
  const text = choice?.message.content ?? "";
  const calls = choice?.message.tool_calls ?? [];
  const output: Array<Record<string, unknown>> = [];
  if (text !== "" || calls.length === 0) {
    output.push({
      type: "message",
      id: `msg_${id()}`,
      status: cut ? "incomplete" : "completed",
      role: "assistant",
      content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
    });
  }
  for (const call of calls) {
    output.push({
      type: "function_call",
      id: `fc_${id()}`,
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
      status: "completed",
    });
  }
  const { usage } = completion;
  return {
    id: `resp_${id()}`,
    object: "response",
    created_at: completion.created,
    status: cut ? "incomplete" : "completed",
    background: false,
    error: null,
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    instructions: valid.echo.instructions,
    max_output_tokens: valid.echo.max_output_tokens,
    max_tool_calls: null,
    model: completion.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    store: false,
    temperature: valid.echo.temperature ?? 1,
    text: valid.echo.text,
    tool_choice: valid.echo.tool_choice,
    tools: valid.echo.tools,
    top_logprobs: 0,
    top_p: valid.echo.top_p ?? 1,
    truncation: "disabled",
    usage: {
      input_tokens: usage.prompt_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.total_tokens,
    },
    user: null,
    metadata: {},
  };
}

function id(): string {
  return randomBytes(24).toString("hex");
}
