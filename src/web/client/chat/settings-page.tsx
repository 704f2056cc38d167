import { useState } from "preact/hooks";
import { api } from "../api/api-client.ts";
import { useAuth } from "../auth/auth-state.tsx";
import { setLanguage, t } from "../i18n/i18n.ts";
import { uiLanguageOf } from "../i18n/languages.ts";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { errorText } from "../ui/error-text.ts";
import { LanguagePicker } from "../ui/language-picker.tsx";

/** The account: its language (texts, mails, the voice reading aloud) and signing out. */
export function SettingsPage() {
  const auth = useAuth();
  const [failure, setFailure] = useState<string>();
  // The language being saved shows at once; once the account is read again, it shows the account's.
  const [picked, setPicked] = useState<string>();
  const pick = async (code: string) => {
    setFailure(undefined);
    setPicked(code);
    try {
      await api("PATCH", "/web/me", { language: code });
      setLanguage(code);
      await auth.reload();
    } catch (error) {
      setFailure(errorText(error));
    } finally {
      setPicked(undefined);
    }
  };
  return (
    <section class="page" aria-labelledby="settings-title">
      <h1 id="settings-title">{t("chat.settings")}</h1>
      <h2>{t("chat.account")}</h2>
      <p>{t("chat.signedInAs", { email: auth.user?.email ?? "" })}</p>
      <LanguagePicker
        value={picked ?? uiLanguageOf(auth.user?.language) ?? "it"}
        onPick={(code) => void pick(code)}
      />
      <ErrorNotice message={failure} />
      <button type="button" class="danger-outline" onClick={() => void auth.signOut()}>
        {t("auth.signOut")}
      </button>
    </section>
  );
}
