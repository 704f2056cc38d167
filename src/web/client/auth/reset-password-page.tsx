import { useState } from "preact/hooks";
import { api } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import type { LoginResponse } from "../api/types.ts";
import { t } from "../i18n/i18n.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { errorText, fieldError } from "../ui/error-text.ts";
import { FormField } from "../ui/form-field.tsx";
import { AuthLayout } from "./auth-layout.tsx";
import { useAuth } from "./auth-state.tsx";

/** The page the password-reset mail links to: a new password, then signed in (`POST /auth/password-reset/confirm`). */
export function ResetPasswordPage() {
  const auth = useAuth();
  const { query } = useLocation();
  const token = query.get("token") ?? "";
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
        "/auth/password-reset/confirm",
        { token, password },
        { auth: false },
      );
      await auth.signedIn(login);
      navigate("/", { replace: true });
    } catch (error) {
      setFailure(error);
    } finally {
      setBusy(false);
    }
  };
  const passwordError = fieldError(failure, "password");
  const badLink =
    !token ||
    fieldError(failure, "token") !== undefined ||
    (failure instanceof ApiError && failure.status === 400);

  return (
    <AuthLayout title={t("auth.resetTitle")}>
      {badLink ? (
        <p class="notice error" role="alert">
          {t("auth.resetBadLink")} <Link href="/forgot-password">{t("auth.forgot")}</Link>
        </p>
      ) : (
        <form onSubmit={submit} noValidate>
          <FormField
            label={t("auth.newPassword")}
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
          {failure !== undefined && !passwordError && (
            <p class="notice error" role="alert">
              {errorText(failure)}
            </p>
          )}
          <button type="submit" class="primary" disabled={busy}>
            {t("auth.resetSave")}
          </button>
        </form>
      )}
    </AuthLayout>
  );
}
