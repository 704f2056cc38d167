import type { LoginResponse } from "../../../contract/app-api.ts";
import { ApiError } from "./api-error.ts";
import { recordRefresh, refreshedFrom } from "./refresh-handoff.ts";
import type { Session } from "./session.ts";
import { currentSession, saveSession } from "./session-store.ts";

/** Where the app API is: the web chat is served by the same Zona. */
export const API_BASE = "/api/v1";
// Refresh a little before the access token runs out, so no request is refused for it.
const EARLY_REFRESH_MS = 60_000;

type SignOutListener = (reason: "expired") => void;
let signOutListener: SignOutListener = () => {};

/** Called when the session ended without the user asking (its refresh token was refused). */
export function onSessionExpired(listener: SignOutListener): void {
  signOutListener = listener;
}

/** The session a login, register, refresh or password-reset answer makes. */
export function sessionOf(login: LoginResponse): Session {
  return {
    accessToken: login.access_token,
    refreshToken: login.refresh_token,
    accessExpiresAt: Date.now() + login.access_expires_in_seconds * 1000,
    userId: login.user.id,
  };
}

interface CallOptions {
  /** Send the access token (default); false for sign-in, register and the mail links. */
  auth?: boolean;
  signal?: AbortSignal;
}

/**
 * Calls the app API and returns the response when it is a success; otherwise throws ApiError. With
 * the access token refused (401) it refreshes the session once and tries again.
 */
export async function apiFetch(
  path: string,
  init: RequestInit = {},
  options: CallOptions = {},
): Promise<Response> {
  if (options.auth === false) return checked(await send(path, init, null, options.signal));
  let session = currentSession();
  if (!session) throw sessionEnded();
  if (session.accessExpiresAt - Date.now() < EARLY_REFRESH_MS) session = await refreshEarly(session);
  let response = await send(path, init, session, options.signal);
  if (response.status === 401) {
    const renewed = await refresh(session);
    if (!renewed) throw sessionEnded();
    response = await send(path, init, renewed, options.signal);
  }
  return checked(response);
}

function sessionEnded(): ApiError {
  return new ApiError(401, "unauthorized", "The session ended.");
}

/**
 * Refreshes a session whose access token runs out soon. A refused refresh token ends the session:
 * nothing more is sent with its access token, even one still valid (the server revoked the account's
 * refresh tokens because one was used twice). Any other failure (network, 429, 5xx) leaves a still
 * valid access token in use.
 */
async function refreshEarly(session: Session): Promise<Session> {
  let renewed: Session | null;
  try {
    renewed = await refresh(session);
  } catch (error) {
    if (session.accessExpiresAt > Date.now()) return session;
    throw error;
  }
  if (!renewed) throw sessionEnded();
  return renewed;
}

/**
 * The access token for a call made outside apiFetch (an upload with progress through
 * XMLHttpRequest), refreshed first when it is about to run out, or when `renew` (it was refused).
 */
export async function freshAccessToken(options: { renew?: boolean } = {}): Promise<string> {
  const session = currentSession();
  if (!session) throw new ApiError(401, "unauthorized", "Not signed in.");
  if (!options.renew && session.accessExpiresAt - Date.now() >= EARLY_REFRESH_MS) return session.accessToken;
  const renewed = await refresh(session);
  if (!renewed) throw new ApiError(401, "unauthorized", "The session ended.");
  return renewed.accessToken;
}

/** JSON in, JSON out (undefined for 204). */
export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<T> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { "content-type": "application/json" };
  }
  const response = await apiFetch(path, init, options);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

async function send(
  path: string,
  init: RequestInit,
  session: Session | null,
  signal?: AbortSignal,
): Promise<Response> {
  const headers = new Headers(init.headers);
  if (session) headers.set("authorization", `Bearer ${session.accessToken}`);
  try {
    return await fetch(`${API_BASE}${path}`, { ...init, headers, ...(signal ? { signal } : {}) });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError(0, "network", "Zona could not be reached.");
  }
}

async function checked(response: Response): Promise<Response> {
  if (response.ok) return response;
  throw await ApiError.from(response);
}

let refreshing: Promise<Session | null> | undefined;

/**
 * Trades the refresh token for a new pair, once at a time across this browser's tabs (a refresh
 * token works once: a second use would revoke every session of the account). When another tab
 * refreshed meanwhile, its pair is used (refresh-handoff.ts). A refused refresh token ends the session.
 */
function refresh(stale: Session): Promise<Session | null> {
  refreshing ??= underLock(async () => {
    const now = currentSession();
    if (!now) return null;
    if (now.refreshToken !== stale.refreshToken) return now;
    const handed = await refreshedFrom(now.refreshToken);
    if (handed) {
      saveSession(handed);
      return handed;
    }
    const response = await send(
      "/auth/refresh",
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ refresh_token: now.refreshToken }),
      },
      null,
    );
    if (response.ok) {
      const session = sessionOf((await response.json()) as LoginResponse);
      await recordRefresh(now.refreshToken, session);
      saveSession(session);
      return session;
    }
    if (response.status === 401 || response.status === 422) {
      saveSession(null);
      signOutListener("expired");
      return null;
    }
    throw await ApiError.from(response);
  }).finally(() => {
    refreshing = undefined;
  });
  return refreshing;
}

function underLock<T>(run: () => Promise<T>): Promise<T> {
  if (typeof navigator !== "undefined" && navigator.locks)
    return navigator.locks.request("zona.refresh", run);
  return run();
}
