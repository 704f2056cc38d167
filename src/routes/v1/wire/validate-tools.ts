import { type FieldErrors, FUNCTION_NAME, given, isObject, say } from "./validate-common.ts";

// OpenAI's limit on the number of tools of one request.
const MAX_TOOLS = 128;
const CHOICE_MODES = ["none", "auto", "required"] as const;
const FORMATS = ["text", "json_object", "json_schema"] as const;

/** A function tool in the chat-completions shape, as passed upstream. */
export interface FunctionTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

/** Chat `tools`: function tools only, each with a valid name; 422 errors collected. */
export function readTools(errors: FieldErrors, value: unknown): FunctionTool[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    errors.add("tools", say.array("tools"));
    return undefined;
  }
  if (value.length > MAX_TOOLS) {
    errors.add("tools", `The tools field must not have more than ${MAX_TOOLS} items.`);
    return undefined;
  }
  const tools: FunctionTool[] = [];
  for (const [i, tool] of value.entries()) {
    const path = `tools.${i}`;
    if (!isObject(tool) || tool.type !== "function") {
      errors.add(`${path}.type`, say.oneOf(`${path}.type`, ["function"]));
      return undefined;
    }
    const fn = readFunction(errors, `${path}.function`, tool.function);
    if (!fn) return undefined;
    tools.push({ type: "function", function: fn });
  }
  return tools;
}

/** A function definition ({name, description, parameters, strict}); shared with /v1/responses. */
export function readFunction(
  errors: FieldErrors,
  path: string,
  value: unknown,
): FunctionTool["function"] | undefined {
  const read = readNamed(errors, path, value, "parameters");
  if (!read) return undefined;
  const { body, ...fn } = read;
  return body === undefined ? fn : { ...fn, parameters: body };
}

/**
 * The shape functions and JSON schemas share: a `name` (1 to 64 letters, digits, '_' or '-'), an
 * optional `description`, an optional object under `bodyField` and an optional boolean `strict`.
 */
function readNamed(
  errors: FieldErrors,
  path: string,
  value: unknown,
  bodyField: "parameters" | "schema",
): { name: string; description?: string; body?: Record<string, unknown>; strict?: boolean } | undefined {
  if (!isObject(value)) {
    errors.add(path, say.object(path));
    return undefined;
  }
  const name = value.name;
  if (typeof name !== "string" || !FUNCTION_NAME.test(name)) {
    errors.add(`${path}.name`, `The ${path}.name field must be 1 to 64 letters, digits, '_' or '-'.`);
    return undefined;
  }
  const out: { name: string; description?: string; body?: Record<string, unknown>; strict?: boolean } = {
    name,
  };
  const fields = [
    ["description", (v: unknown) => typeof v === "string", say.string],
    [bodyField, isObject, say.object],
    ["strict", (v: unknown) => typeof v === "boolean", say.boolean],
  ] as const;
  for (const [field, accepts, message] of fields) {
    const found = given(value, field);
    if (found === undefined) continue;
    if (!accepts(found)) {
      errors.add(`${path}.${field}`, message(`${path}.${field}`));
      return undefined;
    }
    if (field === "description") out.description = found as string;
    else if (field === "strict") out.strict = found as boolean;
    else out.body = found as Record<string, unknown>;
  }
  return out;
}

/** Chat `tool_choice`: a mode, or one of the request's own functions by name. */
export function readToolChoice(
  errors: FieldErrors,
  value: unknown,
  tools: FunctionTool[] | undefined,
): string | { type: "function"; function: { name: string } } | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "string") {
    if (!(CHOICE_MODES as readonly string[]).includes(value)) {
      errors.add("tool_choice", say.oneOf("tool_choice", CHOICE_MODES));
      return undefined;
    }
    if (value === "required" && !tools?.length) {
      errors.add("tool_choice", "The tool_choice field can be 'required' only when tools are given.");
      return undefined;
    }
    return value;
  }
  const name =
    isObject(value) && value.type === "function" && isObject(value.function)
      ? value.function.name
      : undefined;
  if (typeof name !== "string") {
    errors.add(
      "tool_choice",
      'The tool_choice field must be "none", "auto", "required" or a function by name.',
    );
    return undefined;
  }
  return namedChoice(errors, "tool_choice", name, tools);
}

/** A named function choice, which must be one of the tools. */
export function namedChoice(
  errors: FieldErrors,
  field: string,
  name: string,
  tools: FunctionTool[] | undefined,
): { type: "function"; function: { name: string } } | undefined {
  if (!tools?.some((tool) => tool.function.name === name)) {
    errors.add(field, `The ${field} field names the function '${name}', which is not among the tools.`);
    return undefined;
  }
  return { type: "function", function: { name } };
}

/** The chat `response_format` shape, as passed upstream. */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean };
    };

/** Chat `response_format`: `text`, `json_object` or `json_schema` with a named schema. */
export function readResponseFormat(
  errors: FieldErrors,
  field: string,
  value: unknown,
): ResponseFormat | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value) || !(FORMATS as readonly unknown[]).includes(value.type)) {
    errors.add(field, `The ${field} field must have a type of: ${FORMATS.join(", ")}.`);
    return undefined;
  }
  if (value.type !== "json_schema") return { type: value.type as "text" | "json_object" };
  const schema = readSchema(errors, `${field}.json_schema`, value.json_schema);
  return schema ? { type: "json_schema", json_schema: schema } : undefined;
}

/** A named JSON schema ({name, description, schema, strict}); shared with /v1/responses `text.format`. */
export function readSchema(
  errors: FieldErrors,
  path: string,
  value: unknown,
): Extract<ResponseFormat, { type: "json_schema" }>["json_schema"] | undefined {
  const read = readNamed(errors, path, value, "schema");
  if (!read) return undefined;
  const { body, ...schema } = read;
  return body === undefined ? schema : { ...schema, schema: body };
}
