/** The languages the web chat speaks. */
export const UI_LANGUAGES = ["it", "en", "de", "fr"] as const;
export type UiLanguage = (typeof UI_LANGUAGES)[number];

/** The texts of one part of the page in every language, complete in each (English names the keys). */
export type Texts<E extends Record<string, string>> = { en: E } & Record<
  Exclude<UiLanguage, "en">,
  Record<keyof E, string>
>;

/** Names of the languages in their own language, for the language picker. */
export const LANGUAGE_NAMES: Record<UiLanguage, string> = {
  it: "Italiano",
  en: "English",
  de: "Deutsch",
  fr: "Français",
};

/** The interface language for an account or browser language: Romansh and unknown codes read Italian. */
export function uiLanguageOf(code: string | undefined | null): UiLanguage | undefined {
  const short = (code ?? "").slice(0, 2).toLowerCase();
  if ((UI_LANGUAGES as readonly string[]).includes(short)) return short as UiLanguage;
  if (short === "rm") return "it";
  return undefined;
}
