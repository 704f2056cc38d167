import { useState } from "preact/hooks";
import { api } from "../api/api-client.ts";
import { t } from "../i18n/i18n.ts";
import { errorText } from "../ui/error-text.ts";
import { AuthLayout } from "./auth-layout.tsx";
import { useAuth } from "./auth-state.tsx";

/** Signed in with an address not confirmed yet: the app API answers 403 `email_unverified` until it is. */
export function CheckMailPage() {
  const auth = useAuth();
  const [message, setMessage] = useState<{ text: string; error: boolean }>();
  const [busy, setBusy] = useState(false);

  const run = async (work: () => Promise<string | undefined>) => {
    setBusy(true);
    setMessage(undefined);
    try {
      const text = await work();
      if (text) setMessage({ text, error: false });
    } catch (error) {
      setMessage({ text: errorText(error), error: true });
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthLayout title={t("auth.checkMailTitle")}>
      <p>{t("auth.checkMailText", { email: auth.user?.email ?? "" })}</p>
      {message && (
        <p class={message.error ? "notice error" : "notice"} role={message.error ? "alert" : "status"}>
          {message.text}
        </p>
      )}
      <div class="button-row">
        <button
          type="button"
          class="primary"
          disabled={busy}
          onClick={() =>
            run(async () => {
              await auth.reload();
              return t("auth.stillUnverified");
            })
          }
        >
          {t("auth.checkAgain")}
        </button>
        <button
          type="button"
          disabled={busy}
          onClick={() =>
            run(async () => {
              await api("POST", "/auth/resend-verification");
              return t("auth.resent");
            })
          }
        >
          {t("auth.resend")}
        </button>
        <button type="button" class="link" onClick={() => void auth.signOut()}>
          {t("auth.signOut")}
        </button>
      </div>
    </AuthLayout>
  );
}
