import { TIER_NAMES, type TierName } from "../../config/schema.ts";
import { validationFailed } from "../../http/errors.ts";
import type { OutgoingMessage } from "../../services/chat/chat-exchange.ts";
import { characterCount, TITLE_MAX_CHARACTERS } from "../../services/chat/chat-titles.ts";

/** Longest message `content` (spec "Limits"). */
export const CONTENT_MAX_CHARACTERS = 8000;
/** Longest `model` label, and so the longest model id a message may name. */
export const MODEL_MAX_CHARACTERS = 128;
const BACKEND_MAX_CHARACTERS = 128;

// Validation of the chat sessions' bodies (spec "Chat sessions"): problems are 422 `validation_error`
// listing every field at fault. A body that is not a JSON object is read as one without fields.

type Errors = Record<string, string[]>;

function fieldsOf(body: unknown): Record<string, unknown> {
  return typeof body === "object" && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : {};
}

function fault(errors: Errors, field: string, message: string): void {
  errors[field] = [...(errors[field] ?? []), message];
}

function done<T>(errors: Errors, value: T): T {
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
  return value;
}

/** A text field: absent, null, empty or blank is undefined (and an error when required). */
function text(
  errors: Errors,
  fields: Record<string, unknown>,
  name: string,
  rules: { required: boolean; max: number; label?: string },
): string | undefined {
  const value = fields[name];
  const label = rules.label ?? name;
  if (value === undefined || value === null) {
    if (rules.required) fault(errors, name, `The ${label} field is required.`);
    return undefined;
  }
  if (typeof value !== "string") {
    fault(errors, name, `The ${label} field must be a string.`);
    return undefined;
  }
  if (value.trim() === "") {
    if (rules.required) fault(errors, name, `The ${label} field is required.`);
    return undefined;
  }
  if (characterCount(value) > rules.max) {
    fault(errors, name, `The ${label} field must not be greater than ${rules.max} characters.`);
    return undefined;
  }
  return value;
}

/** `POST /chat/sessions`: `title` (optional, up to 255) and `model` (optional label, up to 128). */
export function validateCreateSession(body: unknown): { title?: string; model?: string } {
  const fields = fieldsOf(body);
  const errors: Errors = {};
  const title = text(errors, fields, "title", { required: false, max: TITLE_MAX_CHARACTERS });
  const model = text(errors, fields, "model", { required: false, max: MODEL_MAX_CHARACTERS });
  return done(errors, {
    ...(title !== undefined ? { title } : {}),
    ...(model !== undefined ? { model } : {}),
  });
}

/** `PATCH /chat/sessions/{id}`: `title` (required, up to 255). */
export function validateRename(body: unknown): string {
  const errors: Errors = {};
  const title = text(errors, fieldsOf(body), "title", { required: true, max: TITLE_MAX_CHARACTERS });
  return done(errors, title ?? "");
}

/**
 * `POST /chat/sessions/{id}/messages`: `content` (required text, up to 8000 characters), `model`
 * (required; whether the catalogue has it is found inside the stream), `tier` (one of the tiers),
 * `backend` (a machine family name).
 */
export function validateSendMessage(body: unknown): OutgoingMessage {
  const fields = fieldsOf(body);
  const errors: Errors = {};
  const content = text(errors, fields, "content", { required: true, max: CONTENT_MAX_CHARACTERS });
  const model = text(errors, fields, "model", { required: true, max: MODEL_MAX_CHARACTERS });
  let tier: TierName | undefined;
  if (fields.tier !== undefined && fields.tier !== null) {
    if (typeof fields.tier === "string" && (TIER_NAMES as readonly string[]).includes(fields.tier)) {
      tier = fields.tier as TierName;
    } else {
      fault(errors, "tier", `The selected tier is invalid. Use one of: ${TIER_NAMES.join(", ")}.`);
    }
  }
  const backend = text(errors, fields, "backend", { required: false, max: BACKEND_MAX_CHARACTERS });
  return done(errors, {
    content: content ?? "",
    model: model ?? "",
    ...(tier !== undefined ? { tier } : {}),
    ...(backend !== undefined ? { backend } : {}),
  });
}
