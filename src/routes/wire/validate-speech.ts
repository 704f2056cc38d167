import { invalidRequest } from "../../errors/catalogue.ts";
import type { SpeechRequest } from "../../services/audio/speech-service.ts";
import { speechLanguage } from "../../services/audio/voices.ts";
import { asFields, stringField } from "./fields.ts";

/** Longest `input`, in characters. */
export const SPEECH_MAX_CHARACTERS = 5000;

/**
 * Validates the JSON body of `POST /v1/audio/speech`: `input` required,
 * at most 5,000 characters; `voice` a string; `language` two letters (default `it`);
 * `response_format` `wav` (default) or `mp3`; `model` any and ignored; `speed` 0.5 to 2.0 and
 * ignored; unlisted fields ignored. Problems are 400 naming the field (unknown voices are the
 * service's to refuse).
 */
export function validateSpeech(body: unknown): SpeechRequest {
  const fields = asFields(body);
  const input = stringField(fields, "input", { required: true });
  if (input === undefined) throw invalidRequest("'input' is required.", { param: "input" });
  if ([...input].length > SPEECH_MAX_CHARACTERS) {
    throw invalidRequest(`'input' must be at most ${SPEECH_MAX_CHARACTERS} characters.`, {
      param: "input",
      code: "string_above_max_length",
    });
  }
  const voice = stringField(fields, "voice");
  const language = speechLanguage(fields.language);
  const format = fields.response_format ?? "wav";
  if (format !== "wav" && format !== "mp3") {
    throw invalidRequest("'response_format' must be wav or mp3.", {
      param: "response_format",
      code: "invalid_value",
    });
  }
  const speed = fields.speed;
  if (speed !== undefined && speed !== null && (typeof speed !== "number" || speed < 0.5 || speed > 2)) {
    throw invalidRequest("'speed' must be a number from 0.5 to 2.0.", {
      param: "speed",
      code: "invalid_value",
    });
  }
  return { input, voice: voice === "" ? undefined : voice, language, format };
}
