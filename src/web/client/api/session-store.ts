/** The tokens of the signed-in user, as the app API hands them out. */
export interface Session {
  accessToken: string;
  refreshToken: string;
  /** Milliseconds since the epoch after which the access token is refused. */
  accessExpiresAt: number;
}

const KEY = "zona.session";
type Listener = (session: Session | null) => void;
const listeners = new Set<Listener>();

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
    };
  } catch {
    return null;
  }
}

/** Keeps a new session (after sign-in or a refresh) or forgets it (null), and tells the page. */
export function saveSession(session: Session | null): void {
  if (session) localStorage.setItem(KEY, JSON.stringify(session));
  else localStorage.removeItem(KEY);
  for (const listener of listeners) listener(session);
}

/** Calls `listener` when this tab or another one signs in, refreshes or signs out. */
export function onSessionChange(listener: Listener): () => void {
  listeners.add(listener);
  const fromOtherTab = (event: StorageEvent) => {
    if (event.key === KEY) listener(currentSession());
  };
  window.addEventListener("storage", fromOtherTab);
  return () => {
    listeners.delete(listener);
    window.removeEventListener("storage", fromOtherTab);
  };
}
