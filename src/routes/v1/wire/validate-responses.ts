import type { ChatCall, ChatMessage, ContentPart } from "../../../engines/types.ts";
import { invalidRequest, streamNotImplemented } from "../../../errors/catalogue.ts";
import {
  chatModel,
  FieldErrors,
  type Fields,
  fieldsOf,
  given,
  isObject,
  type ModelLookup,
  readNumber,
  readString,
  say,
} from "./validate-common.ts";
import { checkImages } from "./validate-image.ts";
import type { ImageRef } from "./validate-messages.ts";
import { applyLocalServerRules, MAX_OUTPUT_TOKENS } from "./validate-sampling.ts";
import {
  type FunctionTool,
  namedChoice,
  type ResponseFormat,
  readFunction,
  readSchema,
} from "./validate-tools.ts";

/** A valid `POST /v1/responses` body: the chat call it maps to, and what the answer echoes. */
export interface ValidResponses {
  call: ChatCall;
  echo: {
    instructions: string | null;
    max_output_tokens: number | null;
    temperature: number | null;
    top_p: number | null;
    /** The request's tools and tool_choice in the Responses shape, as given. */
    tools: unknown[];
    tool_choice: unknown;
    text: { format: unknown };
  };
}

const MODES = ["none", "auto", "required"] as const;

/**
 * Validates a `POST /v1/responses` body (the honoured subset, every other field accepted and
 * ignored) into a chat call: `instructions` becomes a leading system message, `developer` messages
 * are system messages, `function_call` and `function_call_output` items become assistant tool calls
 * and tool messages, `reasoning` items are dropped. `stream: true` is 501 before anything else; a
 * missing, invalid or out-of-range field is a 400 naming it; then the model (404, 400) and images
 * are checked as on chat completions.
 */
export function validateResponses(body: unknown, catalogue: ModelLookup): ValidResponses {
  const fields = fieldsOf(body);
  if (given(fields, "stream") === true) throw streamNotImplemented();
  for (const name of ["model", "input"]) {
    const value = given(fields, name);
    if (value === undefined || value === "") {
      throw invalidRequest(`Missing required parameter: '${name}'.`, {
        param: name,
        code: "missing_required_parameter",
      });
    }
  }
  const errors = new FieldErrors();
  const model = readString(errors, "model", given(fields, "model"));
  const instructions = readString(errors, "instructions", given(fields, "instructions"));
  const images: ImageRef[] = [];
  const messages = readInput(errors, given(fields, "input"), images);
  const maxOutput = readNumber(errors, "max_output_tokens", given(fields, "max_output_tokens"), {
    min: 1,
    max: MAX_OUTPUT_TOKENS,
    integer: true,
  });
  const temperature = readNumber(errors, "temperature", given(fields, "temperature"), { min: 0, max: 2 });
  const topP = readNumber(errors, "top_p", given(fields, "top_p"), { min: 0, max: 1 });
  const format = readTextFormat(errors, given(fields, "text"));
  const tools = readResponseTools(errors, given(fields, "tools"));
  const toolChoice = readResponseToolChoice(errors, given(fields, "tool_choice"), tools);
  errors.throwFirstAsBadRequest();
  if (model === undefined || messages === undefined) throw new Error("validated fields missing");

  const entry = chatModel(catalogue, model);
  checkImages(images, entry);
  const params: Record<string, unknown> = {};
  const put = (name: string, value: unknown) => {
    if (value !== undefined) params[name] = value;
  };
  put("max_tokens", maxOutput);
  put("temperature", temperature);
  put("top_p", topP);
  put("response_format", format && format.type !== "text" ? format : undefined);
  put("tools", tools?.length ? tools : undefined);
  put("tool_choice", toolChoice);
  if (entry.local_server) applyLocalServerRules(params, entry.id);
  const system: ChatMessage[] = instructions ? [{ role: "system", content: instructions }] : [];
  return {
    call: { model: entry.id, messages: [...system, ...messages], params },
    echo: {
      instructions: instructions ?? null,
      max_output_tokens: maxOutput ?? null,
      temperature: temperature ?? null,
      top_p: topP ?? null,
      tools: (given(fields, "tools") as unknown[] | undefined) ?? [],
      tool_choice: given(fields, "tool_choice") ?? "auto",
      text: { format: isObject(fields.text) && fields.text.format ? fields.text.format : { type: "text" } },
    },
  };
}

function readInput(errors: FieldErrors, value: unknown, images: ImageRef[]): ChatMessage[] | undefined {
  if (typeof value === "string") return [{ role: "user", content: value }];
  if (!Array.isArray(value) || value.length === 0) {
    errors.add("input", "The input field must be a string or a non-empty list of messages.");
    return undefined;
  }
  const messages: ChatMessage[] = [];
  for (const [i, item] of value.entries()) {
    const path = `input.${i}`;
    if (!isObject(item)) {
      errors.add(path, say.object(path));
      return undefined;
    }
    const type = item.type ?? "message";
    if (type === "reasoning") continue; // meaningful only to the model that wrote it
    if (type === "function_call") {
      const call = readCall(errors, path, item);
      if (!call) return undefined;
      const last = messages.at(-1);
      if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls ?? []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
      continue;
    }
    if (type === "function_call_output") {
      const output = textOf(item.output);
      if (typeof item.call_id !== "string" || output === undefined) {
        errors.add(path, `The ${path} item needs a call_id and a string output.`);
        return undefined;
      }
      messages.push({ role: "tool", tool_call_id: item.call_id, content: output });
      continue;
    }
    if (type !== "message") {
      errors.add(
        `${path}.type`,
        say.oneOf(`${path}.type`, ["message", "function_call", "function_call_output"]),
      );
      return undefined;
    }
    const message = readMessage(errors, path, item, images);
    if (!message) return undefined;
    messages.push(message);
  }
  return messages;
}

function readMessage(
  errors: FieldErrors,
  path: string,
  item: Fields,
  images: ImageRef[],
): ChatMessage | undefined {
  const roles = ["user", "assistant", "system", "developer"];
  if (typeof item.role !== "string" || !roles.includes(item.role)) {
    errors.add(`${path}.role`, say.oneOf(`${path}.role`, roles));
    return undefined;
  }
  const role = item.role === "developer" ? "system" : (item.role as ChatMessage["role"]);
  const content = item.content;
  if (typeof content === "string") return { role, content };
  if (!Array.isArray(content) || content.length === 0) {
    errors.add(`${path}.content`, `The ${path}.content field must be a string or a non-empty list of parts.`);
    return undefined;
  }
  const parts: ContentPart[] = [];
  for (const [j, part] of content.entries()) {
    const at = `${path}.content.${j}`;
    const kind = isObject(part) ? part.type : undefined;
    if (
      isObject(part) &&
      (kind === "input_text" || kind === "output_text") &&
      typeof part.text === "string"
    ) {
      parts.push({ type: "text", text: part.text });
    } else if (isObject(part) && kind === "refusal" && typeof part.refusal === "string") {
      parts.push({ type: "text", text: part.refusal });
    } else if (
      isObject(part) &&
      kind === "input_image" &&
      role === "user" &&
      typeof part.image_url === "string"
    ) {
      const detail = part.detail === "low" || part.detail === "high" ? part.detail : "auto";
      const image: ImageRef["part"] = { type: "image_url", image_url: { url: part.image_url, detail } };
      images.push({ param: `${at}.image_url`, part: image });
      parts.push(image);
    } else {
      errors.add(
        at,
        `The ${at} part must be input_text, output_text or (in a user message) input_image with an image_url.`,
      );
      return undefined;
    }
  }
  return { role, content: parts };
}

function readCall(
  errors: FieldErrors,
  path: string,
  item: Fields,
): NonNullable<ChatMessage["tool_calls"]>[number] | undefined {
  if (
    typeof item.call_id !== "string" ||
    typeof item.name !== "string" ||
    typeof item.arguments !== "string"
  ) {
    errors.add(path, `The ${path} item needs call_id, name and arguments as strings.`);
    return undefined;
  }
  return { id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } };
}

function textOf(output: unknown): string | undefined {
  if (typeof output === "string") return output;
  if (!Array.isArray(output)) return undefined;
  let text = "";
  for (const part of output) {
    if (!isObject(part) || typeof part.text !== "string") return undefined;
    text += part.text;
  }
  return text;
}

function readTextFormat(errors: FieldErrors, value: unknown): ResponseFormat | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    errors.add("text", say.object("text"));
    return undefined;
  }
  const format = given(value, "format");
  if (format === undefined) return undefined;
  const type = isObject(format) ? format.type : undefined;
  if (type === "text" || type === "json_object") return { type };
  if (type === "json_schema") {
    const schema = readSchema(errors, "text.format", format);
    return schema ? { type: "json_schema", json_schema: schema } : undefined;
  }
  errors.add("text.format", say.oneOf("text.format.type", ["text", "json_object", "json_schema"]));
  return undefined;
}

function readResponseTools(errors: FieldErrors, value: unknown): FunctionTool[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    errors.add("tools", say.array("tools"));
    return undefined;
  }
  const tools: FunctionTool[] = [];
  for (const [i, tool] of value.entries()) {
    if (!isObject(tool) || tool.type !== "function") {
      const type = isObject(tool) && typeof tool.type === "string" ? ` ('${tool.type}')` : "";
      errors.add("tools", `Only function tools are supported; tools.${i} is not one${type}.`);
      return undefined;
    }
    // The Responses shape is flat: {type, name, description, parameters, strict}.
    const fn = readFunction(errors, `tools.${i}`, tool);
    if (!fn) return undefined;
    tools.push({ type: "function", function: fn });
  }
  return tools;
}

function readResponseToolChoice(
  errors: FieldErrors,
  value: unknown,
  tools: FunctionTool[] | undefined,
): ChatCall["params"][string] {
  if (value === undefined) return undefined;
  if (typeof value === "string" && (MODES as readonly string[]).includes(value)) {
    if (value === "required" && !tools?.length) {
      errors.add("tool_choice", "The tool_choice field can be 'required' only when tools are given.");
      return undefined;
    }
    return value;
  }
  if (isObject(value) && value.type === "function" && typeof value.name === "string") {
    return namedChoice(errors, "tool_choice", value.name, tools);
  }
  errors.add(
    "tool_choice",
    'The tool_choice field must be "none", "auto", "required" or {type: "function", name}.',
  );
  return undefined;
}
