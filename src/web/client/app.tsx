import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { LoginResponse, WebUser as User } from "../../contract/app-api.ts";
import { api, onSessionExpired, sessionOf } from "./api/api-client.ts";
import { ApiError } from "./api/api-error.ts";
import { currentSession, onOtherTabSessionChange, saveSession } from "./api/session-store.ts";
import { AuthContext, type AuthState } from "./auth/auth-state.tsx";
import { CheckMailPage } from "./auth/check-mail-page.tsx";
import { ForgotPasswordPage } from "./auth/forgot-password-page.tsx";
import { RegisterPage } from "./auth/register-page.tsx";
import { ResetPasswordPage } from "./auth/reset-password-page.tsx";
import { SignInPage } from "./auth/sign-in-page.tsx";
import { VerifyEmailPage } from "./auth/verify-email-page.tsx";
import { ChatLayout } from "./chat/chat-layout.tsx";
import { onLanguageChange, setLanguage } from "./i18n/i18n.ts";
import { navigate, useLocation } from "./router.tsx";
import { errorText } from "./ui/error-text.ts";

// Screens anyone may open; the others need a signed-in user with a verified email.
const PUBLIC_SCREENS: Record<string, () => preact.JSX.Element> = {
  "/sign-in": () => <SignInPage />,
  "/register": () => <RegisterPage />,
  "/forgot-password": () => <ForgotPasswordPage />,
  "/reset-password": () => <ResetPasswordPage />,
  "/verify-email": () => <VerifyEmailPage />,
};

type Loaded =
  | { state: "loading" }
  | { state: "ready"; user: User | null }
  | { state: "failed"; message: string };

/**
 * Leaves the signed-in screens with a full page load: the conversations, models and answers the
 * page keeps for the account are gone with it, so whoever signs in next sees none of them.
 */
function reloadAt(to: string): void {
  location.replace(to);
}

/** The web chat: who is signed in decides which screens the address may show. */
export function App() {
  const { path } = useLocation();
  const [loaded, setLoaded] = useState<Loaded>({ state: "loading" });
  const [, setLanguageTick] = useState(0);
  // The user the page shows now, for the listeners (which outlive a render).
  const shown = useRef<User | null>(null);
  shown.current = loaded.state === "ready" ? loaded.user : null;

  useEffect(() => onLanguageChange(() => setLanguageTick((tick) => tick + 1)), []);

  const loadUser = useCallback(async () => {
    if (!currentSession()) {
      if (shown.current) reloadAt("/sign-in");
      else setLoaded({ state: "ready", user: null });
      return;
    }
    try {
      const user = await api<User>("GET", "/web/me");
      // Another account than the one shown (signed in meanwhile in another tab): start afresh.
      if (shown.current && shown.current.id !== user.id) {
        reloadAt("/");
        return;
      }
      setLanguage(user.language);
      setLoaded({ state: "ready", user });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        if (shown.current) reloadAt("/sign-in?ended=1");
        else setLoaded({ state: "ready", user: null });
      } else setLoaded({ state: "failed", message: errorText(error) });
    }
  }, []);

  useEffect(() => {
    void loadUser();
    // The refresh token was refused: this tab's session ended without the user asking.
    onSessionExpired(() => reloadAt("/sign-in?ended=1"));
    // Another tab signed in, refreshed or signed out.
    return onOtherTabSessionChange((session) => {
      const user = shown.current;
      if (!session) {
        if (user) reloadAt("/sign-in");
      } else if (!user || (session.userId !== undefined && session.userId !== user.id)) {
        void loadUser();
      }
    });
  }, [loadUser]);

  const auth = useMemo<AuthState>(
    () => ({
      user: loaded.state === "ready" ? loaded.user : null,
      async signedIn(login: LoginResponse) {
        saveSession(sessionOf(login));
        await loadUser();
      },
      reload: loadUser,
      async signOut() {
        const session = currentSession();
        if (session) {
          await api("POST", "/auth/logout", { refresh_token: session.refreshToken }).catch(() => {
            // Signed out here either way; the refresh token runs out on its own.
          });
        }
        saveSession(null);
        reloadAt("/sign-in?signed_out=1");
      },
    }),
    [loaded, loadUser],
  );

  if (loaded.state === "loading") return <div class="splash" aria-busy="true" />;
  if (loaded.state === "failed") {
    return (
      <main class="auth-page">
        <p class="notice error" role="alert">
          {loaded.message}
        </p>
      </main>
    );
  }
  return <AuthContext.Provider value={auth}>{screen(path, loaded.user)}</AuthContext.Provider>;
}

function screen(path: string, user: User | null) {
  const publicScreen = PUBLIC_SCREENS[path];
  if (publicScreen && (path === "/verify-email" || path === "/reset-password" || !user))
    return publicScreen();
  if (!user) return <Redirect to="/sign-in" />;
  if (!user.email_verified) return path === "/check-mail" ? <CheckMailPage /> : <Redirect to="/check-mail" />;
  if (publicScreen || path === "/check-mail") return <Redirect to="/" />;
  return <ChatLayout path={path} />;
}

function Redirect(props: { to: string }) {
  useEffect(() => navigate(props.to, { replace: true }), [props.to]);
  return null;
}
