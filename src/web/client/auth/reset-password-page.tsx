import { useState } from "preact/hooks";
import type { LoginResponse } from "../../../contract/app-api.ts";
import { api } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import { t } from "../i18n/i18n.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { errorText, fieldError } from "../ui/error-text.ts";
import { NewPasswordField } from "../ui/new-password-field.tsx";
import { useAction } from "../ui/use-action.ts";
import { AuthLayout } from "./auth-layout.tsx";
import { useAuth } from "./auth-state.tsx";

/** The page the password-reset mail links to: a new password, then signed in (`POST /auth/password-reset/confirm`). */
export function ResetPasswordPage() {
  const auth = useAuth();
  const { query } = useLocation();
  const token = query.get("token") ?? "";
  const [password, setPassword] = useState("");

  const {
    busy,
    failure,
    onSubmit: submit,
  } = useAction(async () => {
    const body = { token, password };
    await auth.signedIn(
      await api<LoginResponse>("POST", "/auth/password-reset/confirm", body, { auth: false }),
    );
    navigate("/", { replace: true });
  });
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
          <NewPasswordField
            label={t("auth.newPassword")}
            value={password}
            onValue={setPassword}
            error={passwordError}
          />
          <ErrorNotice message={failure !== undefined && !passwordError ? errorText(failure) : undefined} />
          <button type="submit" class="primary" disabled={busy}>
            {t("auth.resetSave")}
          </button>
        </form>
      )}
    </AuthLayout>
  );
}
