import type { ModelConfig } from "../../../config/schema.ts";
import {
  invalidRequest,
  modelNotFound,
  unknownParameter,
  unsupportedParameter,
  validationFailed,
  wrongModelKind,
} from "../../../errors/catalogue.ts";

/** A request body read as named fields. */
export type Fields = Record<string, unknown>;

/** What the validators need of the catalogue. */
export interface ModelLookup {
  find(id: string): ModelConfig | undefined;
}

/** How the body arrived: only a JSON body is checked for unknown names before its values (see validateChat). */
export interface BodyOptions {
  /** The request had `Content-Type: application/json` (a body without it was read as a form, or as empty). */
  json: boolean;
  catalogue: ModelLookup;
}

/**
 * The fields at fault of one request, each with its messages, in the order found. The chat-style
 * endpoints answer them all at once (422, shape 2); the others answer the first one with a 400.
 */
export class FieldErrors {
  readonly byField: Record<string, string[]> = {};

  add(field: string, message: string): void {
    const list = this.byField[field];
    if (list) list.push(message);
    else this.byField[field] = [message];
  }

  get empty(): boolean {
    return Object.keys(this.byField).length === 0;
  }

  /** 422 with every field at fault (chat completions, completions). */
  throwValidation(): void {
    if (!this.empty) throw validationFailed(this.byField);
  }

  /** 400 naming the first field at fault (responses). */
  throwFirstAsBadRequest(): void {
    const [field, messages] = Object.entries(this.byField)[0] ?? [];
    if (field !== undefined)
      throw invalidRequest(messages?.[0] ?? `Invalid '${field}'.`, { param: field, code: "invalid_value" });
  }
}

/** A parsed body as fields: anything but an object (invalid JSON arrives as {}) reads as empty. */
export function fieldsOf(body: unknown): Fields {
  return typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Fields) : {};
}

/** The value of a field, with `null` read as absent (OpenAI's nullable parameters). */
export function given(fields: Fields, name: string): unknown {
  const value = fields[name];
  return value === null ? undefined : value;
}

/**
 * Refuses the first name of the body (in the client's order) that the endpoint refuses or does not
 * know, as OpenAI reports an unrecognised argument.
 */
export function checkNames(
  fields: Fields,
  known: ReadonlySet<string>,
  refused: ReadonlyMap<string, string>,
): void {
  for (const name of Object.keys(fields)) {
    const reason = refused.get(name);
    if (reason !== undefined) throw unsupportedParameter(name, reason);
    if (!known.has(name)) throw unknownParameter(name);
  }
}

/** The catalogue entry of a text endpoint's model: 404 when unknown, 400 when of another kind. */
export function chatModel(catalogue: ModelLookup, id: string): ModelConfig {
  const model = catalogue.find(id);
  if (!model) throw modelNotFound(id);
  if (model.kind !== "chat") throw wrongModelKind(id, "chat");
  return model;
}

/** Laravel-style wording of the 422 messages (the 422 shape with `errors` comes from such a validator). */
export const say = {
  required: (field: string) => `The ${field} field is required.`,
  string: (field: string) => `The ${field} field must be a string.`,
  nonEmpty: (field: string) => `The ${field} field must not be empty.`,
  number: (field: string) => `The ${field} field must be a number.`,
  integer: (field: string) => `The ${field} field must be an integer.`,
  boolean: (field: string) => `The ${field} field must be true or false.`,
  object: (field: string) => `The ${field} field must be an object.`,
  array: (field: string) => `The ${field} field must be an array.`,
  between: (field: string, min: number, max: number) =>
    `The ${field} field must be between ${min} and ${max}.`,
  oneOf: (field: string, values: readonly string[]) =>
    `The ${field} field must be one of: ${values.join(", ")}.`,
};

/** A number (integer when asked) within [min, max]; adds an error and gives undefined otherwise. */
export function readNumber(
  errors: FieldErrors,
  field: string,
  value: unknown,
  range: { min?: number; max?: number; integer?: boolean } = {},
): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    errors.add(field, range.integer ? say.integer(field) : say.number(field));
    return undefined;
  }
  if (range.integer && !Number.isInteger(value)) {
    errors.add(field, say.integer(field));
    return undefined;
  }
  if ((range.min !== undefined && value < range.min) || (range.max !== undefined && value > range.max)) {
    errors.add(
      field,
      say.between(field, range.min ?? Number.MIN_SAFE_INTEGER, range.max ?? Number.MAX_SAFE_INTEGER),
    );
    return undefined;
  }
  return value;
}

/** A boolean; adds an error and gives undefined otherwise. */
export function readBoolean(errors: FieldErrors, field: string, value: unknown): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") {
    errors.add(field, say.boolean(field));
    return undefined;
  }
  return value;
}

/** A string (at most `max` characters); adds an error and gives undefined otherwise. */
export function readString(
  errors: FieldErrors,
  field: string,
  value: unknown,
  options: { max?: number; nonEmpty?: boolean } = {},
): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    errors.add(field, say.string(field));
    return undefined;
  }
  if (options.nonEmpty && value === "") {
    errors.add(field, say.nonEmpty(field));
    return undefined;
  }
  if (options.max !== undefined && value.length > options.max) {
    errors.add(field, `The ${field} field must not be greater than ${options.max} characters.`);
    return undefined;
  }
  return value;
}

/** Whether a value is a plain JSON object. */
export function isObject(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The name rule OpenAI applies to function and schema names. */
export const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The required `model` of the text endpoints (422 when missing or not a string). */
export function readModel(errors: FieldErrors, fields: Fields): string | undefined {
  const value = given(fields, "model");
  if (value === undefined || value === "") {
    errors.add("model", say.required("model"));
    return undefined;
  }
  return readString(errors, "model", value);
}
