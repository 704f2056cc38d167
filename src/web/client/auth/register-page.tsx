import { useState } from "preact/hooks";
import { api } from "../api/api-client.ts";
import type { LoginResponse } from "../api/types.ts";
import { language, t } from "../i18n/i18n.ts";
import { Link, navigate } from "../router.tsx";
import { errorText, fieldError } from "../ui/error-text.ts";
import { FormField } from "../ui/form-field.tsx";
import { AuthLayout } from "./auth-layout.tsx";
import { useAuth } from "./auth-state.tsx";

/** Opens an account in the interface's language (`POST /auth/register`); the mail's link verifies it. */
export function RegisterPage() {
  const auth = useAuth();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [failure, setFailure] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setFailure(undefined);
    try {
      const login = await api<LoginResponse>(
        "POST",
        "/auth/register",
        { email, password, language: language() },
        { auth: false },
      );
      await auth.signedIn(login);
      navigate("/check-mail", { replace: true });
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
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
        <FormField
          label={t("auth.password")}
          type="password"
          name="password"
          autocomplete="new-password"
          minLength={8}
          required
          hint={t("auth.passwordHint")}
          value={password}
          onValue={setPassword}
          error={passwordError}
        />
        {other && (
          <p class="notice error" role="alert">
            {other}
          </p>
        )}
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
