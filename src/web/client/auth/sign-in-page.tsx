import { useState } from "preact/hooks";
import type { LoginResponse } from "../../../contract/app-api.ts";
import { api } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import { t } from "../i18n/i18n.ts";
import { Link, useLocation } from "../router.tsx";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { errorText } from "../ui/error-text.ts";
import { FormField } from "../ui/form-field.tsx";
import { installationName } from "../ui/installation.ts";
import { useAction } from "../ui/use-action.ts";
import { AuthLayout } from "./auth-layout.tsx";
import { useAuth } from "./auth-state.tsx";

/** Sign in with email and password (`POST /auth/login`). */
export function SignInPage() {
  const auth = useAuth();
  const { query } = useLocation();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const notice = query.has("ended")
    ? t("auth.sessionExpired")
    : query.has("signed_out")
      ? t("auth.signedOut")
      : undefined;

  const {
    busy,
    failure,
    onSubmit: submit,
  } = useAction(async () => {
    await auth.signedIn(
      await api<LoginResponse>("POST", "/auth/login", { email, password }, { auth: false }),
    );
  });
  const error =
    failure === undefined
      ? undefined
      : failure instanceof ApiError && (failure.code === "invalid_credentials" || failure.status === 422)
        ? t("auth.wrongCredentials")
        : errorText(failure);

  return (
    <AuthLayout title={t("auth.signInTitle", { name: installationName() })}>
      {notice && !error && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <FormField
          label={t("auth.email")}
          type="email"
          name="email"
          autocomplete="username"
          required
          value={email}
          onValue={setEmail}
        />
        <FormField
          label={t("auth.password")}
          type="password"
          name="password"
          autocomplete="current-password"
          required
          value={password}
          onValue={setPassword}
        />
        <ErrorNotice message={error} />
        <button type="submit" class="primary" disabled={busy}>
          {t("auth.signIn")}
        </button>
      </form>
      <p class="auth-links">
        <Link href="/forgot-password">{t("auth.forgot")}</Link>
      </p>
      <p class="auth-links">
        {t("auth.noAccount")} <Link href="/register">{t("auth.register")}</Link>
      </p>
    </AuthLayout>
  );
}
