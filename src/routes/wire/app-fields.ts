import { validationFailed } from "../../errors/catalogue.ts";
import { characterCount } from "../../services/text/character-count.ts";

/** A JSON body read as named fields; a body that is not an object has none. */
export function bodyFields(body: unknown): Record<string, unknown> {
  return typeof body === "object" && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : {};
}

/**
 * The fields at fault of one app API request, each with its messages: validation goes through
 * every field, then `check()` throws one 422 `validation_error` listing them all.
 */
export class FieldErrors {
  private readonly errors: Record<string, string[]> = {};

  add(field: string, message: string): void {
    this.errors[field] = [...(this.errors[field] ?? []), message];
  }

  /** Throws the 422 when any field is at fault. */
  check(): void {
    if (Object.keys(this.errors).length > 0) throw validationFailed(this.errors);
  }
}

/** What a text field must be. */
export interface TextRule {
  required: boolean;
  max: number;
  min?: number;
  oneOf?: readonly string[];
  /** The field's name in messages, when it differs. */
  label?: string;
}

/**
 * A text field of an app API body: absent, null, empty or blank is undefined (and a fault when
 * required); otherwise a string within its length (in characters) and, with `oneOf`, one of those.
 */
export function textField(
  fields: Record<string, unknown>,
  name: string,
  rule: TextRule,
  errors: FieldErrors,
): string | undefined {
  const value = fields[name];
  const label = rule.label ?? name;
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) {
    if (rule.required) errors.add(name, `The ${label} field is required.`);
    return undefined;
  }
  if (typeof value !== "string") {
    errors.add(name, `The ${label} field must be a string.`);
    return undefined;
  }
  // PostgreSQL text cannot hold NUL: a conversation's model or a message with one was a 500.
  if (value.includes("\u0000")) {
    errors.add(name, `The ${label} field must not contain NUL characters.`);
    return undefined;
  }
  const length = characterCount(value);
  if (rule.min !== undefined && length < rule.min) {
    errors.add(name, `The ${label} field must be at least ${rule.min} characters.`);
  } else if (length > rule.max) {
    errors.add(name, `The ${label} field must not be greater than ${rule.max} characters.`);
  } else if (rule.oneOf && !rule.oneOf.includes(value)) {
    errors.add(name, `The ${label} field must be one of ${rule.oneOf.join(", ")}.`);
  } else {
    return value;
  }
  return undefined;
}
