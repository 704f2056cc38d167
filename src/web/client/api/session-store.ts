import { forgetRefresh } from "./refresh-handoff.ts";
import type { Session } from "./session.ts";

const KEY = "zona.session";
type Listener = (session: Session | null) => void;

/** The session kept in this browser, shared by its tabs. */
export function currentSession(): Session | null {
  try {
    const text = localStorage.getItem(KEY);
    if (!text) return null;
    const value = JSON.parse(text) as Partial<Session>;
    if (typeof value.accessToken !== "string" || typeof value.refreshToken !== "string") return null;
    return {
      accessToken: value.accessToken,
      refreshToken: value.refreshToken,
      accessExpiresAt: Number(value.accessExpiresAt) || 0,
      ...(typeof value.userId === "string" ? { userId: value.userId } : {}),
    };
  } catch {
    return null;
  }
}

/** Keeps a new session (after sign-in or a refresh) or forgets it (null); the other tabs hear of it. */
export function saveSession(session: Session | null): void {
  if (session) localStorage.setItem(KEY, JSON.stringify(session));
  else {
    localStorage.removeItem(KEY);
    void forgetRefresh();
  }
}

/** Calls `listener` when another tab of this browser signs in, refreshes or signs out. */
export function onOtherTabSessionChange(listener: Listener): () => void {
  const fromOtherTab = (event: StorageEvent) => {
    if (event.key === KEY || event.key === null) listener(currentSession());
  };
  window.addEventListener("storage", fromOtherTab);
  return () => window.removeEventListener("storage", fromOtherTab);
}
