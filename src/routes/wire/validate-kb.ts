import type { KbQuestion } from "../../services/knowledge/kb-ask.ts";
import { bodyFields, FieldErrors, textField } from "./app-fields.ts";

/** Longest question, in characters. */
export const QUESTION_MAX_CHARACTERS = 2000;
/** The passages given to the model: 1 to 20, 5 when not said. */
export const TOP_K_MIN = 1;
export const TOP_K_MAX = 20;
export const TOP_K_DEFAULT = 5;
/** Longest name and description of a base. */
export const KB_NAME_MAX_CHARACTERS = 128;
export const KB_DESCRIPTION_MAX_CHARACTERS = 1000;
/** Longest model id a question may name (as a chat message's label). */
const MODEL_MAX_CHARACTERS = 128;

/**
 * A question to a knowledge base, from either API: `question` (required, up to 2,000 characters),
 * `model` (a catalogue id; whether it exists is the text service's to say), `top_k` (a whole number
 * from 1 to 20). Faults are 422 listing every field (the key API's chat-validation shape, the app
 * API's `validation_error`: the error handler shapes it by surface); other fields are ignored.
 */
export function validateQuestion(body: unknown): KbQuestion {
  const fields = bodyFields(body);
  const errors = new FieldErrors();
  const question = textField(fields, "question", { required: true, max: QUESTION_MAX_CHARACTERS }, errors);
  const model = textField(fields, "model", { required: false, max: MODEL_MAX_CHARACTERS }, errors);
  const topK = fields.top_k ?? null;
  if (
    topK !== null &&
    (typeof topK !== "number" || !Number.isInteger(topK) || topK < TOP_K_MIN || topK > TOP_K_MAX)
  ) {
    errors.add("top_k", `The top k field must be a whole number between ${TOP_K_MIN} and ${TOP_K_MAX}.`);
  }
  errors.check();
  return {
    question: question ?? "",
    ...(model !== undefined ? { model } : {}),
    topK: typeof topK === "number" ? topK : TOP_K_DEFAULT,
  };
}

/** `POST /rag/kb`: `name` (required, up to 128 characters), `description` (optional, up to 1,000). */
export function validateNewBase(body: unknown): { name: string; description?: string } {
  const fields = bodyFields(body);
  const errors = new FieldErrors();
  const name = textField(fields, "name", { required: true, max: KB_NAME_MAX_CHARACTERS }, errors);
  const description = textField(
    fields,
    "description",
    { required: false, max: KB_DESCRIPTION_MAX_CHARACTERS },
    errors,
  );
  errors.check();
  return { name: (name ?? "").trim(), ...(description !== undefined ? { description } : {}) };
}
