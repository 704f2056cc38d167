/**
 * The deterministic "model" behind the fake engines: the answer is `echo: <last user text>`, so a
 * test knows what comes back. Pieces are its words (or `chunks` of them, cycling); a tool is called
 * when tools are offered and the text asks about the weather; JSON modes answer a JSON object.
 */

/** What a fake was asked to generate. */
export interface GenerationInput {
  /** The text the answer echoes (the last user message, or the prompt). */
  text: string;
  /** OpenAI-shaped function tools offered. */
  tools?: unknown;
  /** Plain text, any JSON object, or JSON following a schema. */
  format: "text" | "json" | { schema: unknown };
  maxTokens?: number | undefined;
  stop?: string[] | undefined;
  chunks?: number | undefined;
}

/** What the fake model generated. */
export interface Generation {
  /** The answer's content pieces (one per streamed chunk, one token each); empty for a tool call. */
  pieces: string[];
  content: string;
  finishReason: "stop" | "length" | "tool_calls";
  toolCall?: { name: string; arguments: Record<string, unknown> };
  completionTokens: number;
}

type Json = Record<string, unknown>;

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Generates the answer for an input. */
export function generate(input: GenerationInput): Generation {
  const tool = weatherTool(input);
  if (tool !== undefined) {
    const city = /\bin ([\p{Lu}][\p{L}-]+)/u.exec(input.text)?.[1] ?? "Zurich";
    const parameters = isJson(tool.parameters) ? tool.parameters : undefined;
    const example =
      parameters && isJson(parameters.properties) ? exampleOf(parameters, city, parameters) : undefined;
    const args = isJson(example) ? example : { location: city };
    return {
      pieces: [],
      content: "",
      finishReason: "tool_calls",
      toolCall: { name: tool.name, arguments: args },
      completionTokens: Math.max(1, Math.ceil(JSON.stringify(args).length / 4)),
    };
  }
  const { format } = input;
  let pieces: string[];
  if (format === "text") {
    pieces = words(`echo: ${input.text}`);
    const chunks = input.chunks;
    if (chunks !== undefined && pieces.length > 0) {
      const base = pieces;
      pieces = Array.from({ length: chunks }, (_, i) => {
        const word = base[i % base.length] as string;
        return i >= base.length && !/^\s/.test(word) ? ` ${word}` : word;
      });
    }
  } else {
    const value =
      format === "json" ? { echo: input.text } : exampleOf(format.schema, input.text, format.schema);
    pieces = words(JSON.stringify(value));
  }
  let finishReason: Generation["finishReason"] = "stop";
  for (const stop of input.stop ?? []) {
    const content = pieces.join("");
    const at = stop.length > 0 ? content.indexOf(stop) : -1;
    if (at !== -1) pieces = words(content.slice(0, at));
  }
  if (input.maxTokens !== undefined && pieces.length > input.maxTokens) {
    pieces = pieces.slice(0, input.maxTokens);
    finishReason = "length";
  }
  return { pieces, content: pieces.join(""), finishReason, completionTokens: pieces.length };
}

/** A text cut into words, each with the whitespace before it. */
export function words(text: string): string[] {
  return text.match(/\s*\S+/g) ?? [];
}

/** Prompt tokens as the fakes count them: a quarter of the characters, at least one. */
export function promptTokens(characters: number): number {
  return Math.max(1, Math.ceil(characters / 4));
}

function weatherTool(input: GenerationInput): { name: string; parameters: unknown } | undefined {
  if (!Array.isArray(input.tools) || input.tools.length === 0 || !/weather/i.test(input.text))
    return undefined;
  const functions = input.tools
    .map((tool) => (isJson(tool) && isJson(tool.function) ? tool.function : undefined))
    .filter((fn): fn is Json => fn !== undefined && typeof fn.name === "string");
  const chosen = functions.find((fn) => /weather/i.test(String(fn.name))) ?? functions[0];
  return chosen === undefined ? undefined : { name: String(chosen.name), parameters: chosen.parameters };
}

/** A value following a JSON schema (enough of JSON Schema for what SDK helpers such as zod produce). */
export function exampleOf(schema: unknown, text: string, root: unknown, depth = 0): unknown {
  if (!isJson(schema) || depth > 8) return text;
  if (typeof schema.$ref === "string" && isJson(root)) {
    const name = schema.$ref.split("/").at(-1) ?? "";
    const defs = isJson(root.$defs) ? root.$defs : isJson(root.definitions) ? root.definitions : {};
    return exampleOf(defs[name], text, root, depth + 1);
  }
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const options = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : undefined;
  if (options !== undefined && options.length > 0) return exampleOf(options[0], text, root, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (type === "object" || (type === undefined && isJson(schema.properties))) {
    const out: Json = {};
    const properties = isJson(schema.properties) ? schema.properties : {};
    for (const [key, value] of Object.entries(properties)) out[key] = exampleOf(value, text, root, depth + 1);
    return out;
  }
  if (type === "array") return [exampleOf(schema.items, text, root, depth + 1)];
  if (type === "integer" || type === "number") return 42;
  if (type === "boolean") return true;
  if (type === "null") return null;
  return text;
}

/** The text of a chat message's content (text parts joined by a space). */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (isJson(part) && part.type === "text" && typeof part.text === "string" ? part.text : ""))
    .filter((text) => text.length > 0)
    .join(" ");
}

/** The text of the last user message of a conversation. */
export function lastUserText(messages: unknown): string {
  if (!Array.isArray(messages)) return "";
  for (let i = messages.length - 1; i >= 0; i--) {
    const message: unknown = messages[i];
    if (isJson(message) && message.role === "user") return contentText(message.content);
  }
  return "";
}

/** All characters of a conversation's text, for prompt tokens. */
export function conversationCharacters(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let count = 0;
  for (const message of messages) if (isJson(message)) count += contentText(message.content).length;
  return count;
}

/** A deterministic unit vector for a text (FNV-1a seed, mulberry32 numbers), in float32 precision. */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  let seed = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) {
    seed ^= byte;
    seed = Math.imul(seed, 0x01000193) >>> 0;
  }
  const values = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const value = ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
    values[i] = value;
    norm += value * value;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dimensions; i++) values[i] = (values[i] as number) * scale;
  return Array.from(values);
}

/**
 * A bag-of-words embedding: each word (lower-case letters and digits, 3 or more) adds 1 to the
 * dimension its hash picks; normalised. Texts sharing words are near, as real embeddings of texts
 * on one subject are, so a question finds the passage that answers it.
 */
export function wordEmbedding(text: string, dimensions: number): number[] {
  const values = new Float32Array(dimensions);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []) {
    let hash = 0x811c9dc5;
    for (const byte of Buffer.from(word, "utf8")) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
    const index = hash % dimensions;
    values[index] = (values[index] as number) + 1;
  }
  let norm = 0;
  for (const value of values) norm += value * value;
  const scale = norm === 0 ? 0 : 1 / Math.sqrt(norm);
  return Array.from(values, (value) => value * scale);
}

/** A vector as OpenAI's base64 encoding: little-endian float32 bytes. */
export function base64Vector(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString("base64");
}

/** The rerank score of the fakes: the share of the query's words that the document contains. */
export function wordOverlap(query: string, document: string): number {
  const queryWords = new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  if (queryWords.size === 0) return 0;
  const documentWords = new Set(document.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
  let shared = 0;
  for (const word of queryWords) if (documentWords.has(word)) shared++;
  return shared / queryWords.size;
}
