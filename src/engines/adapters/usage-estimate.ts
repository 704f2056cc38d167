import type { ChatMessage, TokenUsage } from "../types.ts";
import { isPayload, numberField } from "./payload.ts";

/** Tokens estimated from characters (about four per token), never below one. */
export function estimateTokens(characters: number): number {
  return Math.max(1, Math.ceil(characters / 4));
}

/** The characters of a conversation that count towards its prompt: text parts and tool-call arguments. */
export function messageCharacters(messages: ChatMessage[]): number {
  let count = 0;
  for (const message of messages) {
    const content = message.content;
    if (typeof content === "string") count += content.length;
    else if (content !== null) {
      for (const part of content) if (part.type === "text") count += part.text.length;
    }
    for (const call of message.tool_calls ?? [])
      count += call.function.name.length + call.function.arguments.length;
  }
  return count;
}

/** A usage object from two counts. */
export function tokenUsage(prompt: number, completion: number): TokenUsage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/**
 * The usage an upstream reported, with any missing count estimated; undefined when it reported
 * none at all. Billing always needs numbers.
 */
export function reportedUsage(
  raw: unknown,
  estimatePrompt: () => number,
  estimateCompletion: () => number,
): TokenUsage | undefined {
  if (!isPayload(raw)) return undefined;
  const prompt = wholeCount(raw.prompt_tokens);
  const completion = wholeCount(raw.completion_tokens);
  if (prompt === undefined && completion === undefined) return undefined;
  return tokenUsage(prompt ?? estimatePrompt(), completion ?? estimateCompletion());
}

/** A count an upstream reported, if it is a non-negative number. */
export function wholeCount(value: unknown): number | undefined {
  const n = numberField(value);
  return n !== undefined && n >= 0 ? Math.round(n) : undefined;
}
