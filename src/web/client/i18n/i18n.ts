import { AUDIO_TEXT } from "../audio/audio-text.ts";
import { AUTH_TEXT } from "../auth/auth-text.ts";
import { CHAT_TEXT } from "../chat/chat-text.ts";
import { KB_TEXT } from "../kb/kb-text.ts";
import { COMMON_TEXT } from "./common-text.ts";
import { UI_LANGUAGES, type UiLanguage, uiLanguageOf } from "./languages.ts";

const PARTS = [COMMON_TEXT, AUTH_TEXT, CHAT_TEXT, KB_TEXT, AUDIO_TEXT] as const;
type Part = (typeof PARTS)[number];
type KeysOf<P> = P extends { en: infer E } ? keyof E : never;
/** The name of a text of the interface. */
export type TextKey = KeysOf<Part> & string;

const TEXTS = Object.fromEntries(
  UI_LANGUAGES.map((language) => [language, Object.assign({}, ...PARTS.map((part) => part[language]))]),
) as Record<UiLanguage, Record<TextKey, string>>;

const STORED = "zona.language";
let current: UiLanguage = initialLanguage();
// The page was served with the installation's language; screen readers must read the one shown.
document.documentElement.lang = current;
const listeners = new Set<(language: UiLanguage) => void>();

/** Before sign-in: the language last used here, else the browser's, else the installation's. */
function initialLanguage(): UiLanguage {
  const stored = uiLanguageOf(safeStored());
  if (stored) return stored;
  for (const code of navigator.languages ?? []) {
    const found = uiLanguageOf(code);
    if (found) return found;
  }
  return uiLanguageOf(document.documentElement.lang) ?? "it";
}

function safeStored(): string | null {
  try {
    return localStorage.getItem(STORED);
  } catch {
    return null;
  }
}

/** The interface language now. */
export function language(): UiLanguage {
  return current;
}

/** Switches the interface to the account's (or the picked) language. */
export function setLanguage(code: string): void {
  const next = uiLanguageOf(code) ?? current;
  try {
    localStorage.setItem(STORED, next);
  } catch {
    // Private mode: the choice lasts as long as the page.
  }
  document.documentElement.lang = next;
  if (next === current) return;
  current = next;
  for (const listener of listeners) listener(next);
}

/** Calls `listener` when the language changes. */
export function onLanguageChange(listener: (language: UiLanguage) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The text `key` in the interface language, with `{name}` places filled from `values`. */
export function t(key: TextKey, values: Record<string, string | number> = {}): string {
  const text = TEXTS[current][key] ?? TEXTS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? String(values[name]) : whole));
}
