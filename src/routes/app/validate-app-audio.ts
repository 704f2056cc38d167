import type { ReceivedFile } from "../../http/multipart-upload.ts";
import type { SpeechRequest } from "../../services/audio/speech-service.ts";
import { bodyFields, FieldErrors, textField } from "../wire/app-fields.ts";
import { SPEECH_MAX_CHARACTERS } from "../wire/validate-speech.ts";
import { PROMPT_MAX_CHARACTERS } from "../wire/validate-transcription.ts";

/** The fields of `POST /audio/transcribe`, validated. */
export interface AppTranscribeFields {
  model: "asr-1" | "asr-1-hd";
  language?: string;
  prompt?: string;
  withSegments: boolean;
}

/**
 * Validates `POST /audio/transcribe`: `audio`, `model`, `language`,
 * `prompt`, `with_segments`; unlike the key API an empty field is refused, not read as absent.
 * Problems are 422 `validation_error` listing every field at fault.
 */
export function validateAppTranscribe(
  fields: ReadonlyMap<string, string[]>,
  file: ReceivedFile | undefined,
): AppTranscribeFields {
  const errors = new FieldErrors();
  const fault = (field: string, message: string) => errors.add(field, message);
  const value = (name: string): string | undefined => {
    const found = fields.get(name)?.[0];
    if (found === "") fault(name, `The ${name} field must not be empty.`);
    return found === "" ? undefined : found;
  };
  if (file === undefined) fault("audio", "The audio file is required.");
  else if (file.size === 0 && !file.truncated) fault("audio", "The audio file is empty.");
  const model = value("model") ?? "asr-1";
  if (model !== "asr-1" && model !== "asr-1-hd") fault("model", "The model must be asr-1 or asr-1-hd.");
  const language = value("language");
  if (language !== undefined && !/^[A-Za-z]{2}$/.test(language)) {
    fault("language", "The language must be a two-letter code such as it, en, de or fr.");
  }
  const prompt = value("prompt");
  if (prompt !== undefined && [...prompt].length > PROMPT_MAX_CHARACTERS) {
    fault("prompt", `The prompt may have at most ${PROMPT_MAX_CHARACTERS} characters.`);
  }
  const segments = value("with_segments");
  if (segments !== undefined && !["true", "false", "1", "0"].includes(segments)) {
    fault("with_segments", "with_segments must be true or false.");
  }
  errors.check();
  return {
    model: model as AppTranscribeFields["model"],
    ...(language !== undefined ? { language: language.toLowerCase() } : {}),
    ...(prompt !== undefined ? { prompt } : {}),
    withSegments: segments === "true" || segments === "1",
  };
}

/**
 * Validates `POST /audio/synthesize`: `text` (required, at most 5,000 characters), `voice`,
 * `language` (two letters; absent: the account's language, which also picks the default voice),
 * `format` (`wav` default, or `mp3`). Problems are 422 `validation_error`; an unknown voice is the
 * service's 400 `invalid_voice`.
 */
export function validateAppSynthesize(body: unknown, accountLanguage: string): SpeechRequest {
  const fields = bodyFields(body);
  const errors = new FieldErrors();
  const { voice, language, format } = fields;
  const text = textField(fields, "text", { required: true, max: SPEECH_MAX_CHARACTERS }, errors);
  if (voice !== undefined && voice !== null && (typeof voice !== "string" || voice === "")) {
    errors.add("voice", "The voice must be a voice name.");
  }
  if (
    language !== undefined &&
    language !== null &&
    (typeof language !== "string" || !/^[A-Za-z]{2}$/.test(language))
  ) {
    errors.add("language", "The language must be a two-letter code such as it, en, de or fr.");
  }
  if (format !== undefined && format !== null && format !== "wav" && format !== "mp3") {
    errors.add("format", "The format must be wav or mp3.");
  }
  errors.check();
  return {
    input: text ?? "",
    voice: typeof voice === "string" ? voice : undefined,
    language: typeof language === "string" ? language.toLowerCase() : accountLanguage,
    format: format === "mp3" ? "mp3" : "wav",
  };
}
