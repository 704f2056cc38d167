import { useEffect, useState } from "preact/hooks";
import { api } from "../api/api-client.ts";
import { currentSession } from "../api/session-store.ts";
import { t } from "../i18n/i18n.ts";
import { Link } from "../router.tsx";
import { errorText, fieldError } from "../ui/error-text.ts";
import { AuthLayout } from "./auth-layout.tsx";
import { useAuth } from "./auth-state.tsx";

type Outcome = { state: "working" } | { state: "done"; email: string } | { state: "failed"; message: string };

/** The page the verification mail links to: confirms the address with the link's token (`POST /auth/verify-email`). */
export function VerifyEmailPage() {
  const auth = useAuth();
  const [outcome, setOutcome] = useState<Outcome>({ state: "working" });

  useEffect(() => {
    const token = new URLSearchParams(location.search).get("token") ?? "";
    // The token leaves the address bar (and the history) once read.
    history.replaceState(null, "", "/verify-email");
    let live = true;
    void (async () => {
      try {
        const answer = await api<{ user: { email: string } }>(
          "POST",
          "/auth/verify-email",
          { token },
          { auth: false },
        );
        if (currentSession()) await auth.reload();
        if (live) setOutcome({ state: "done", email: answer.user.email });
      } catch (error) {
        const message = fieldError(error, "token") ? t("auth.verifyBadLink") : errorText(error);
        if (live) setOutcome({ state: "failed", message });
      }
    })();
    return () => {
      live = false;
    };
    // Once per visit: the token works once.
  }, []);

  return (
    <AuthLayout title={t("auth.verifyTitle")}>
      {outcome.state === "working" && (
        <p class="notice" role="status" aria-busy="true">
          {t("auth.verifying")}
        </p>
      )}
      {outcome.state === "done" && (
        <>
          <p class="notice success" role="status">
            {t("auth.verified", { email: outcome.email })}
          </p>
          {auth.user ? (
            <Link class="button primary" href="/">
              {t("auth.verifiedContinue")}
            </Link>
          ) : (
            <Link class="button primary" href="/sign-in">
              {t("auth.verifiedSignIn")}
            </Link>
          )}
        </>
      )}
      {outcome.state === "failed" && (
        <>
          <p class="notice error" role="alert">
            {outcome.message}
          </p>
          <Link class="button" href={auth.user ? "/check-mail" : "/sign-in"}>
            {t("auth.signIn")}
          </Link>
        </>
      )}
    </AuthLayout>
  );
}
