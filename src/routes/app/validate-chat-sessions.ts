import { TIER_NAMES, type TierName } from "../../config/schema.ts";
import type { OutgoingMessage } from "../../services/chat/chat-exchange.ts";
import { TITLE_MAX_CHARACTERS } from "../../services/chat/chat-titles.ts";
import { bodyFields, FieldErrors, textField } from "../wire/app-fields.ts";

/** Longest message `content`. */
export const CONTENT_MAX_CHARACTERS = 8000;
/** Longest `model` label, and so the longest model id a message may name. */
export const MODEL_MAX_CHARACTERS = 128;
const BACKEND_MAX_CHARACTERS = 128;

// Validation of the chat sessions' bodies: problems are 422 `validation_error`
// listing every field at fault. A body that is not a JSON object is read as one without fields.

/** `POST /chat/sessions`: `title` (optional, up to 255) and `model` (optional label, up to 128). */
export function validateCreateSession(body: unknown): { title?: string; model?: string } {
  const fields = bodyFields(body);
  const errors = new FieldErrors();
  const title = textField(fields, "title", { required: false, max: TITLE_MAX_CHARACTERS }, errors);
  const model = textField(fields, "model", { required: false, max: MODEL_MAX_CHARACTERS }, errors);
  errors.check();
  return {
    ...(title !== undefined ? { title } : {}),
    ...(model !== undefined ? { model } : {}),
  };
}

/** `PATCH /chat/sessions/{id}`: `title` (required, up to 255). */
export function validateRename(body: unknown): string {
  const errors = new FieldErrors();
  const title = textField(bodyFields(body), "title", { required: true, max: TITLE_MAX_CHARACTERS }, errors);
  errors.check();
  return title ?? "";
}

/**
 * `POST /chat/sessions/{id}/messages`: `content` (required text, up to 8000 characters), `model`
 * (required; whether the catalogue has it is found inside the stream), `tier` (one of the tiers),
 * `backend` (a machine family name).
 */
export function validateSendMessage(body: unknown): OutgoingMessage {
  const fields = bodyFields(body);
  const errors = new FieldErrors();
  const content = textField(fields, "content", { required: true, max: CONTENT_MAX_CHARACTERS }, errors);
  const model = textField(fields, "model", { required: true, max: MODEL_MAX_CHARACTERS }, errors);
  let tier: TierName | undefined;
  if (fields.tier !== undefined && fields.tier !== null) {
    if (typeof fields.tier === "string" && (TIER_NAMES as readonly string[]).includes(fields.tier)) {
      tier = fields.tier as TierName;
    } else {
      errors.add("tier", `The selected tier is invalid. Use one of: ${TIER_NAMES.join(", ")}.`);
    }
  }
  const backend = textField(fields, "backend", { required: false, max: BACKEND_MAX_CHARACTERS }, errors);
  errors.check();
  return {
    content: content ?? "",
    model: model ?? "",
    ...(tier !== undefined ? { tier } : {}),
    ...(backend !== undefined ? { backend } : {}),
  };
}
