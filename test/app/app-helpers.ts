import type { TestApp } from "../helpers/test-app.ts";

/** A signed-in user of the app API: the account and an access token minted for it. */
export interface AppUserHandle {
  accountId: string;
  email: string;
  token: string;
  /** Calls the app API (`/api/v1` + path) with the user's access token. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Same, with a JSON body. */
  post(path: string, body: unknown, method?: string): Promise<Response>;
}

let serial = 0;

/**
 * Opens an account through the operator API (verified email unless told otherwise) and mints an
 * access token for it, without going through `/auth/login`.
 */
export async function signedInUser(
  t: TestApp,
  options: { verified?: boolean; language?: string; email?: string } = {},
): Promise<AppUserHandle> {
  serial += 1;
  const email = options.email ?? `app-user-${serial}-${Date.now()}@example.com`;
  const account = await t.admin("POST", "/accounts", {
    email,
    email_verified: options.verified ?? true,
    ...(options.language ? { language: options.language } : {}),
  });
  if (account.status !== 201) throw new Error(`account: ${JSON.stringify(account.body)}`);
  const token = await t.app.services.appSessions.accessToken(account.body.id);
  const fetchApp = (path: string, init: RequestInit = {}) =>
    t.fetch(`/api/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) },
    });
  return {
    accountId: account.body.id,
    email,
    token,
    fetch: fetchApp,
    post: (path, body, method = "POST") =>
      fetchApp(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  };
}
