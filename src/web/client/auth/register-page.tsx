import { useState } from "preact/hooks";
import type { LoginResponse } from "../../../contract/app-api.ts";
import { api } from "../api/api-client.ts";
import { language, t } from "../i18n/i18n.ts";
import { Link, navigate } from "../router.tsx";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { errorText, fieldError } from "../ui/error-text.ts";
import { FormField } from "../ui/form-field.tsx";
import { NewPasswordField } from "../ui/new-password-field.tsx";
import { useAction } from "../ui/use-action.ts";
import { AuthLayout } from "./auth-layout.tsx";
import { useAuth } from "./auth-state.tsx";

/** Opens an account in the interface's language (`POST /auth/register`); the mail's link verifies it. */
export function RegisterPage() {
  const auth = useAuth();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");

  const {
    busy,
    failure,
    onSubmit: submit,
  } = useAction(async () => {
    const body = { email, password, language: language() };
    await auth.signedIn(await api<LoginResponse>("POST", "/auth/register", body, { auth: false }));
    navigate("/check-mail", { replace: true });
  });
  const emailError = fieldError(failure, "email");
  const passwordError = fieldError(failure, "password");
  const other = failure !== undefined && !emailError && !passwordError ? errorText(failure) : undefined;

  return (
    <AuthLayout title={t("auth.registerTitle")}>
      <form onSubmit={submit} noValidate>
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
        <NewPasswordField
          label={t("auth.password")}
          value={password}
          onValue={setPassword}
          error={passwordError}
        />
        <ErrorNotice message={other} />
        <button type="submit" class="primary" disabled={busy}>
          {t("auth.register")}
        </button>
      </form>
      <p class="auth-links">
        {t("auth.haveAccount")} <Link href="/sign-in">{t("auth.signIn")}</Link>
      </p>
    </AuthLayout>
  );
}
