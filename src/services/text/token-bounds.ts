import type { ChatCall, ChatMessage, CompletionCall } from "../../engines/types.ts";

/** The output limit of a request that names none: the most `max_tokens` may ask for. */
export const DEFAULT_MAX_TOKENS = 8192;
// Tokens an image may take in the prompt of a vision model: a generous upper bound.
const IMAGE_TOKENS = 4096;
const MESSAGE_OVERHEAD_TOKENS = 8;

/**
 * The most tokens a text can be: byte-level tokenizers never make a token of less than one byte,
 * so the UTF-8 length bounds the count for every model.
 */
export function maxTokensOf(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** A plain estimate (about four characters a token) where an upstream reports no count. */
export function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4));
}

/** Upper bounds of a chat request's input and output tokens, for the reservation. */
export function chatTokenBounds(call: ChatCall): { input: number; output: number } {
  let input = 0;
  for (const message of call.messages) input += messageBound(message);
  if (call.params.tools !== undefined) input += maxTokensOf(JSON.stringify(call.params.tools));
  if (call.params.response_format !== undefined)
    input += maxTokensOf(JSON.stringify(call.params.response_format));
  return { input, output: outputBound(call.params) };
}

/** Upper bounds of a text completion's input and output tokens. */
export function completionTokenBounds(call: CompletionCall): { input: number; output: number } {
  return { input: maxTokensOf(call.prompt) + MESSAGE_OVERHEAD_TOKENS, output: outputBound(call.params) };
}

/** A rough count of a chat request's input tokens, for a stream cut before the upstream counted. */
export function estimateChatInput(call: ChatCall): number {
  let text = "";
  for (const message of call.messages) {
    if (typeof message.content === "string") text += message.content;
    else for (const part of message.content ?? []) if (part.type === "text") text += part.text;
  }
  return estimateTokens(text) + call.messages.length * 4;
}

function messageBound(message: ChatMessage): number {
  let tokens = MESSAGE_OVERHEAD_TOKENS;
  if (typeof message.content === "string") tokens += maxTokensOf(message.content);
  else {
    for (const part of message.content ?? []) {
      tokens += part.type === "text" ? maxTokensOf(part.text) : IMAGE_TOKENS;
    }
  }
  if (message.tool_calls) tokens += maxTokensOf(JSON.stringify(message.tool_calls));
  return tokens;
}

function outputBound(params: Record<string, unknown>): number {
  const max = typeof params.max_tokens === "number" ? params.max_tokens : DEFAULT_MAX_TOKENS;
  const n = typeof params.n === "number" ? params.n : 1;
  return max * n;
}
