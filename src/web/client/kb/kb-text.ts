import type { Texts } from "../i18n/languages.ts";

const en = {
  "kb.title": "Knowledge bases",
};

/** Texts of the knowledge-base screens. */
export const KB_TEXT: Texts<typeof en> = {
  en,
  it: { "kb.title": "Basi di conoscenza" },
  de: { "kb.title": "Wissensdatenbanken" },
  fr: { "kb.title": "Bases de connaissances" },
};
