import { useState } from "preact/hooks";
import { api } from "../api/api-client.ts";
import { t } from "../i18n/i18n.ts";
import { Link } from "../router.tsx";
import { errorText, fieldError } from "../ui/error-text.ts";
import { FormField } from "../ui/form-field.tsx";
import { AuthLayout } from "./auth-layout.tsx";

/** Asks for the password-reset mail (`POST /auth/forgot-password`); the answer never says whether the address exists. */
export function ForgotPasswordPage() {
  const [email, setEmail] = useState("");
  const [sent, setSent] = useState(false);
  const [failure, setFailure] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setFailure(undefined);
    try {
      await api("POST", "/auth/forgot-password", { email }, { auth: false });
      setSent(true);
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  const emailError = fieldError(failure, "email");

  return (
    <AuthLayout title={t("auth.forgotTitle")}>
      {sent ? (
        <p class="notice" role="status">
          {t("auth.forgotSent")}
        </p>
      ) : (
        <form onSubmit={submit} noValidate>
          <p>{t("auth.forgotIntro")}</p>
          <FormField
            label={t("auth.email")}
            type="email"
            name="email"
            autocomplete="email"
            required
            value={email}
            onValue={setEmail}
            error={emailError}
          />
          {failure !== undefined && !emailError && (
            <p class="notice error" role="alert">
              {errorText(failure)}
            </p>
          )}
          <button type="submit" class="primary" disabled={busy}>
            {t("auth.forgotSend")}
          </button>
        </form>
      )}
      <p class="auth-links">
        <Link href="/sign-in">{t("auth.signIn")}</Link>
      </p>
    </AuthLayout>
  );
}
