import type { VoiceName } from "../../engines/types.ts";
import { invalidRequest } from "../../errors/catalogue.ts";
import { unknownVoice } from "../../errors/media-errors.ts";

/** One own voice (docs/audio-api.md#voices). */
export interface Voice {
  name: VoiceName;
  /** The language it reads (two letters). */
  language: "it" | "en" | "de" | "fr";
  gender: "female" | "male";
}

/** The six own voices, in the order of docs/audio-api.md#voices. */
export const VOICES: readonly Voice[] = [
  { name: "paola", language: "it", gender: "female" },
  { name: "riccardo", language: "it", gender: "male" },
  { name: "amy", language: "en", gender: "female" },
  { name: "ryan", language: "en", gender: "male" },
  { name: "thorsten", language: "de", gender: "male" },
  { name: "siwis", language: "fr", gender: "female" },
];

/** The default voice of each language with voices; any other language (Romansh included) is read in Italian. */
export const DEFAULT_VOICES: Readonly<Record<"it" | "en" | "de" | "fr", VoiceName>> = {
  it: "paola",
  en: "amy",
  de: "thorsten",
  fr: "siwis",
};

// Third-party names (case-insensitive) only choose the character; the language comes from `language`.
const FEMALE_NAMES = ["alloy", "nova", "shimmer", "coral", "sage"];
const MALE_NAMES = ["echo", "onyx", "fable", "ash", "ballad", "verse"];

/** Every name `voice` accepts, for the message of an unknown one. */
export const VALID_VOICE_NAMES: readonly string[] = [
  ...VOICES.map((voice) => voice.name),
  ...FEMALE_NAMES,
  ...MALE_NAMES,
];

/** The default voice of a language: its own default, else the Italian one. */
export function defaultVoice(language: string): VoiceName {
  return DEFAULT_VOICES[language as keyof typeof DEFAULT_VOICES] ?? DEFAULT_VOICES.it;
}

/**
 * The own voice that reads a request: an own name as given
 * (case-sensitive); a third-party name picks the female or male voice of `language` (German has
 * only a male voice and French only a female one, used whatever the name asks; a language without
 * voices is read by an Italian voice); no voice, the default of `language`. Unknown: 400 listing
 * the valid names.
 */
export function resolveVoice(voice: string | undefined, language: string, param = "voice"): VoiceName {
  if (voice === undefined) return defaultVoice(language);
  const own = VOICES.find((candidate) => candidate.name === voice);
  if (own) return own.name;
  const lower = voice.toLowerCase();
  const gender = FEMALE_NAMES.includes(lower) ? "female" : MALE_NAMES.includes(lower) ? "male" : undefined;
  if (gender === undefined) throw unknownVoice(voice, VALID_VOICE_NAMES, param);
  const spoken = VOICES.filter((candidate) => candidate.language === language);
  const inLanguage = spoken.length > 0 ? spoken : VOICES.filter((candidate) => candidate.language === "it");
  const match = inLanguage.find((candidate) => candidate.gender === gender) ?? inLanguage[0];
  return match?.name ?? DEFAULT_VOICES.it;
}

/** The language of a speech request: a two-letter code, `it` when absent (400 otherwise). */
export function speechLanguage(value: unknown, param = "language"): string {
  if (value === undefined || value === null) return "it";
  if (typeof value !== "string" || !/^[A-Za-z]{2}$/.test(value)) {
    throw invalidRequest(`'${param}' must be a two-letter language code such as it, en, de or fr.`, {
      param,
      code: "invalid_value",
    });
  }
  return value.toLowerCase();
}
