import { useState } from "preact/hooks";
import { api } from "../api/api-client.ts";
import { t } from "../i18n/i18n.ts";
import { Link } from "../router.tsx";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { errorText, fieldError } from "../ui/error-text.ts";
import { FormField } from "../ui/form-field.tsx";
import { useAction } from "../ui/use-action.ts";
import { AuthLayout } from "./auth-layout.tsx";

/** Asks for the password-reset mail (`POST /auth/forgot-password`); the answer never says whether the address exists. */
export function ForgotPasswordPage() {
  const [email, setEmail] = useState("");
  const [sent, setSent] = useState(false);

  const {
    busy,
    failure,
    onSubmit: submit,
  } = useAction(async () => {
    await api("POST", "/auth/forgot-password", { email }, { auth: false });
    setSent(true);
  });
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
          <ErrorNotice message={failure !== undefined && !emailError ? errorText(failure) : undefined} />
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
