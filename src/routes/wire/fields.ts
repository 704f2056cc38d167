import { invalidRequest } from "../../errors/catalogue.ts";

/** A request body or query read as an object of named fields. */
export type Fields = Record<string, unknown>;

/** Reads a parsed body as fields; anything but an object is refused. */
export function asFields(value: unknown): Fields {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw invalidRequest("The request body must be a JSON object.");
  }
  return value as Fields;
}

type Presence = { required?: boolean };

/** A string field; absent (or null) gives undefined unless required. */
export function stringField(
  fields: Fields,
  name: string,
  options: Presence & { max?: number; min?: number; pattern?: RegExp; patternHint?: string } = {},
): string | undefined {
  const value = present(fields, name, options);
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw invalidRequest(`'${name}' must be a string.`, { param: name });
  // PostgreSQL text cannot hold NUL: such a value stored or looked up was a 500 (admin-api-fuzz).
  if (value.includes("\u0000")) {
    throw invalidRequest(`'${name}' must not contain NUL characters.`, { param: name });
  }
  if (value.length < (options.min ?? (options.required ? 1 : 0))) {
    throw invalidRequest(`'${name}' must not be empty.`, { param: name });
  }
  if (options.max !== undefined && value.length > options.max) {
    throw invalidRequest(`'${name}' must be at most ${options.max} characters.`, { param: name });
  }
  if (options.pattern && !options.pattern.test(value)) {
    throw invalidRequest(`'${name}' ${options.patternHint ?? "has an invalid format"}.`, { param: name });
  }
  return value;
}

/** A number field (a numeric string from a form or query is read too). */
export function numberField(
  fields: Fields,
  name: string,
  options: Presence & { min?: number; max?: number; integer?: boolean } = {},
): number | undefined {
  const raw = present(fields, name, options);
  if (raw === undefined) return undefined;
  const value = typeof raw === "string" && raw.trim() !== "" ? Number(raw) : raw;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw invalidRequest(`'${name}' must be a number.`, { param: name });
  }
  if (options.integer && !Number.isInteger(value)) {
    throw invalidRequest(`'${name}' must be a whole number.`, { param: name });
  }
  if (
    (options.min !== undefined && value < options.min) ||
    (options.max !== undefined && value > options.max)
  ) {
    throw invalidRequest(`'${name}' must be between ${options.min ?? "-∞"} and ${options.max ?? "∞"}.`, {
      param: name,
    });
  }
  return value;
}

/** A boolean field (`"true"`/`"false"` from a form or query is read too). */
export function booleanField(fields: Fields, name: string, options: Presence = {}): boolean | undefined {
  const value = present(fields, name, options);
  if (value === undefined) return undefined;
  if (value === true || value === "true") return true;
  if (value === false || value === "false") return false;
  throw invalidRequest(`'${name}' must be true or false.`, { param: name });
}

/** A list of strings. */
export function stringListField(
  fields: Fields,
  name: string,
  options: Presence & { maxItems?: number } = {},
): string[] | undefined {
  const value = present(fields, name, options);
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || item === "")) {
    throw invalidRequest(`'${name}' must be a list of non-empty strings.`, { param: name });
  }
  if (options.maxItems !== undefined && value.length > options.maxItems) {
    throw invalidRequest(`'${name}' may hold at most ${options.maxItems} items.`, { param: name });
  }
  return value as string[];
}

/** An ISO 8601 timestamp. */
export function dateField(fields: Fields, name: string, options: Presence = {}): Date | undefined {
  const value = stringField(fields, name, options);
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) {
    throw invalidRequest(`'${name}' must be an ISO 8601 date or timestamp, such as 2027-01-31T23:59:59Z.`, {
      param: name,
    });
  }
  return date;
}

function present(fields: Fields, name: string, options: Presence): unknown {
  const value = fields[name];
  if (value === undefined || value === null) {
    if (options.required)
      throw invalidRequest(`'${name}' is required.`, { param: name, code: "missing_required_parameter" });
    return undefined;
  }
  return value;
}
