import type { Language } from "../../config/names.ts";

/** The web chat's title of a new conversation, in each language an installation can speak. */
export const DEFAULT_TITLES: Record<Language, string> = {
  it: "Nuova chat",
  en: "New chat",
  de: "Neuer Chat",
  fr: "Nouvelle discussion",
  rm: "Nov chat",
};

/** A first message shorter than this (in characters) becomes the title unchanged. */
export const SHORT_MESSAGE_CHARACTERS = 12;
/** Longest title. */
export const TITLE_MAX_CHARACTERS = 255;
/** Longest title made from the beginning of the first message, ellipsis included. */
export const FALLBACK_TITLE_CHARACTERS = 60;

/**
 * The beginning of the first message as a title: one line, at most 60 characters, cut after a
 * whole word and marked with "…" when the message is longer.
 */
export function titleFromMessage(message: string): string {
  const text = message.replace(/\s+/g, " ").trim();
  const characters = [...text];
  if (characters.length <= FALLBACK_TITLE_CHARACTERS) return text;
  const room = characters.slice(0, FALLBACK_TITLE_CHARACTERS - 1).join("");
  // Cut before the word that does not fit; a first word longer than the room is cut where it ends.
  const space = room.lastIndexOf(" ");
  const cut = characters[FALLBACK_TITLE_CHARACTERS - 1] === " " || space <= 0 ? room : room.slice(0, space);
  return `${cut.trimEnd()}…`;
}

/**
 * A model's answer made a title: its first non-empty line, without quotes, a `Title:` label or
 * markdown marks around it, spaces collapsed, at most 255 characters. Empty when nothing is left.
 */
export function cleanGeneratedTitle(answer: string): string {
  const line =
    answer
      .split(/\r?\n/)
      .map((part) => part.trim())
      .find((part) => part.length > 0) ?? "";
  let title = line
    .replace(/^#+\s*/, "")
    .replace(/^\*\*(.*)\*\*$/, "$1")
    .replace(/^(title|titolo|titel|titre)\s*:\s*/i, "")
    .replace(/\s+/g, " ")
    .trim();
  // Quotes around the whole title, as models like to add (also after a label): "…", «…», '…', `…`.
  for (;;) {
    const unquoted = title.replace(/^["'`«»“”„‘’‚](.*)["'`«»“”„‘’‚]$/u, "$1").trim();
    if (unquoted === title) break;
    title = unquoted;
  }
  title = title.replace(/[.。]$/u, "").trim();
  return [...title].slice(0, TITLE_MAX_CHARACTERS).join("").trim();
}
