import { useId } from "preact/hooks";
import { language, t } from "../i18n/i18n.ts";
import { LANGUAGE_NAMES, UI_LANGUAGES } from "../i18n/languages.ts";

/** Picks the interface language; `onPick` may also store it on the account. */
export function LanguagePicker(props: { onPick: (code: string) => void; value?: string }) {
  const id = useId();
  return (
    <div class="language-picker">
      <label for={id}>{t("common.language")}</label>
      <select
        id={id}
        value={props.value ?? language()}
        onChange={(event) => props.onPick(event.currentTarget.value)}
      >
        {UI_LANGUAGES.map((code) => (
          <option key={code} value={code}>
            {LANGUAGE_NAMES[code]}
          </option>
        ))}
      </select>
    </div>
  );
}
