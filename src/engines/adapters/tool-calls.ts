import type { ChatMessage } from "../types.ts";
import { UpstreamError } from "../types.ts";
import { expectPayload, newId, stringField } from "./payload.ts";

/** The tool calls of an internal message. */
export type ToolCalls = NonNullable<ChatMessage["tool_calls"]>;

/**
 * Tool calls of an upstream answer in the exact OpenAI shape: an id (generated when the upstream
 * gives none, as Ollama does) and the arguments as a JSON string (Ollama sends an object).
 * Undefined when there are none.
 */
export function toolCallsOf(value: unknown): ToolCalls | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return value.map((raw) => {
    const call = expectPayload(raw, "a tool call");
    const fn = expectPayload(call.function, "a tool call function");
    const name = stringField(fn.name);
    if (name === undefined)
      throw new UpstreamError("protocol", "the upstream sent a tool call without a name");
    const args = fn.arguments;
    return {
      id: stringField(call.id) ?? newId("call_"),
      type: "function" as const,
      function: { name, arguments: typeof args === "string" ? args : JSON.stringify(args ?? {}) },
    };
  });
}

/** The characters of tool calls, for usage estimates. */
export function toolCallCharacters(calls: ToolCalls | undefined): number {
  let count = 0;
  for (const call of calls ?? []) count += call.function.name.length + call.function.arguments.length;
  return count;
}
