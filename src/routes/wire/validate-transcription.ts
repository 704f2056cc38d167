import { invalidRequest, unsupportedValue } from "../../errors/catalogue.ts";

/** The fields of a transcription form, validated (docs/audio-api.md#fields). */
export interface ValidTranscriptionFields {
  model: "asr-1" | "asr-1-hd";
  language?: string;
  prompt?: string;
  responseFormat: "json" | "text" | "verbose_json";
  temperature?: number;
  words: boolean;
}

/** Longest `prompt`, in characters. */
export const PROMPT_MAX_CHARACTERS = 1024;
const MODELS = ["asr-1", "asr-1-hd"] as const;
const FORMATS = ["json", "text", "verbose_json"] as const;

/**
 * Validates the text fields of `POST /v1/audio/transcriptions`: `model` (`asr-1` default or
 * `asr-1-hd`), `language` (two letters), `prompt` (at most 1,024 characters), `response_format`
 * (`json`, `text`, `verbose_json`; `srt` and `vtt` refused), `temperature` (0 to 1) and
 * `timestamp_granularities[]` (`word`, `segment`; only with `verbose_json`). Empty `prompt`,
 * `language` and `response_format` count as absent; unlisted fields are ignored. Any problem is
 * 400 naming the field.
 */
export function validateTranscriptionFields(
  fields: ReadonlyMap<string, string[]>,
  tooLong: ReadonlySet<string>,
): ValidTranscriptionFields {
  const one = (name: string) => fields.get(name)?.[0];
  const optional = (name: string) => {
    const value = one(name);
    return value === undefined || value === "" ? undefined : value;
  };

  const modelValue = one("model") ?? "asr-1";
  if (!(MODELS as readonly string[]).includes(modelValue)) {
    throw invalidRequest(`'model' must be asr-1 or asr-1-hd, not '${shown(modelValue)}'.`, {
      param: "model",
      code: "invalid_value",
    });
  }
  const language = optional("language");
  if (language !== undefined && !/^[A-Za-z]{2}$/.test(language)) {
    throw invalidRequest("'language' must be a two-letter language code such as it, en, de or fr.", {
      param: "language",
      code: "invalid_value",
    });
  }
  const prompt = optional("prompt");
  if (tooLong.has("prompt") || (prompt !== undefined && [...prompt].length > PROMPT_MAX_CHARACTERS)) {
    throw invalidRequest(`'prompt' must be at most ${PROMPT_MAX_CHARACTERS} characters.`, {
      param: "prompt",
      code: "string_above_max_length",
    });
  }
  const format = optional("response_format") ?? "json";
  if (format === "srt" || format === "vtt") {
    throw unsupportedValue(
      "response_format",
      `response_format '${format}' is not available here; use json, text or verbose_json.`,
    );
  }
  if (!(FORMATS as readonly string[]).includes(format)) {
    throw invalidRequest(`'response_format' must be json, text or verbose_json, not '${shown(format)}'.`, {
      param: "response_format",
      code: "invalid_value",
    });
  }
  const temperature = temperatureOf(one("temperature"));
  const granularities = [
    ...(fields.get("timestamp_granularities[]") ?? []),
    ...(fields.get("timestamp_granularities") ?? []),
  ];
  for (const value of granularities) {
    if (value !== "word" && value !== "segment") {
      throw invalidRequest(`'timestamp_granularities[]' takes word and segment, not '${shown(value)}'.`, {
        param: "timestamp_granularities",
        code: "invalid_value",
      });
    }
  }
  if (granularities.length > 0 && format !== "verbose_json") {
    throw invalidRequest("'timestamp_granularities[]' is only available with response_format verbose_json.", {
      param: "timestamp_granularities",
      code: "invalid_value",
    });
  }
  return {
    model: modelValue as ValidTranscriptionFields["model"],
    ...(language !== undefined ? { language: language.toLowerCase() } : {}),
    ...(prompt !== undefined ? { prompt } : {}),
    responseFormat: format as ValidTranscriptionFields["responseFormat"],
    ...(temperature !== undefined ? { temperature } : {}),
    words: granularities.includes("word"),
  };
}

function temperatureOf(value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number < 0 || number > 1) {
    throw invalidRequest("'temperature' must be a number from 0 to 1.", {
      param: "temperature",
      code: "invalid_value",
    });
  }
  return number;
}

function shown(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}...` : value;
}
