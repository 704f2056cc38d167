import type { Texts } from "../i18n/languages.ts";

const en = {
  "audio.dictate": "Dictate",
  "audio.readAloud": "Read aloud",
};

/** Texts of dictation and reading aloud. */
export const AUDIO_TEXT: Texts<typeof en> = {
  en,
  it: { "audio.dictate": "Detta", "audio.readAloud": "Leggi ad alta voce" },
  de: { "audio.dictate": "Diktieren", "audio.readAloud": "Vorlesen" },
  fr: { "audio.dictate": "Dicter", "audio.readAloud": "Lire à voix haute" },
};
