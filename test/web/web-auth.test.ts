import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailTokens } from "../../src/store/schema.ts";
import {
  type LoginBody,
  mailsTo,
  newEmail,
  PASSWORD,
  postJson,
  register,
  verifiedUser,
} from "../app/auth-fixtures.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

/** Room for a loaded two-core machine: expect.poll gives up after one second by default. */
const POLL = { timeout: 15_000 };

// The browser globals the code run in the page reads (the tests compile without the DOM library).
declare const document: { querySelector(selector: string): { requestSubmit(): void } | null };

interface StoredSession {
  accessToken: string;
  refreshToken: string;
  accessExpiresAt: number;
}

/** The session the page keeps in localStorage (`zona.session`), or null. */
function storedSession(page: Page): Promise<StoredSession | null> {
  return page.evaluate(() => {
    const text = localStorage.getItem("zona.session");
    return text ? (JSON.parse(text) as StoredSession) : null;
  });
}

/** Changes the stored session behind the page's back (no storage event reaches the page itself). */
async function patchSession(page: Page, patch: Partial<StoredSession>): Promise<void> {
  await page.evaluate((change) => {
    const text = localStorage.getItem("zona.session");
    if (!text) throw new Error("no session stored");
    localStorage.setItem("zona.session", JSON.stringify({ ...JSON.parse(text), ...change }));
  }, patch);
}

/**
 * Changes the stored session and sends the message already typed in the composer, in one turn of
 * the page's script: no other call of the page (a look for the title) can run in between.
 */
async function patchSessionAndSend(page: Page, patch: Partial<StoredSession>): Promise<void> {
  await page.evaluate((change) => {
    const text = localStorage.getItem("zona.session");
    if (!text) throw new Error("no session stored");
    localStorage.setItem("zona.session", JSON.stringify({ ...JSON.parse(text), ...change }));
    const form = document.querySelector("form.composer");
    if (!form) throw new Error("no composer");
    form.requestSubmit();
  }, patch);
}

/** Sends a message through the composer and waits for the fake model's echo. */
async function sendAndGetAnswer(page: Page, text: string): Promise<void> {
  const before = await page.locator(".message.assistant").count();
  await page.locator(".composer textarea").fill(text);
  await page.locator(".composer textarea").press("Enter");
  await expect.poll(() => page.locator(".message.assistant").count(), POLL).toBe(before + 1);
  await expect
    .poll(() => page.locator(".message.assistant").last().innerText(), POLL)
    .toContain(`echo: ${text}`);
  await expect.poll(() => page.locator(".message.assistant.streaming").count(), POLL).toBe(0);
}

function pathOf(page: Page): string {
  return new URL(page.url()).pathname;
}

/** Calls the app API over HTTP with a bearer token; JSON out. */
async function callApi(
  s: WebStack,
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await s.t.fetch(`/api/v1${path}`, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

describe.skipIf(!CHROMIUM)(
  "Web chat sign-in, sessions and language in Chromium (issue 14; spec Authentication / App API, States and transitions)",
  // Each test signs in through the page a few times (password hashing): room for a loaded machine.
  { timeout: 90_000 },
  () => {
    let s: WebStack;
    const extraContexts: BrowserContext[] = [];
    beforeAll(async () => {
      s = await startWebStack();
    }, 60_000);
    afterAll(async () => {
      for (const context of extraContexts) await context.close().catch(() => {});
      await s?.close();
    });

    /** A context of the stack's browser with its own locale, watched for page errors and CSP reports. */
    async function pageWithLocale(locale: string): Promise<Page> {
      const context = await s.browser.newContext({ baseURL: s.t.url, locale });
      extraContexts.push(context);
      const page = await context.newPage();
      watch(page);
      return page;
    }

    function watch(page: Page): void {
      page.on("pageerror", (error) => s.problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text()))
          s.problems.push(`csp: ${message.text()}`);
      });
    }

    it('issue 14, docs/app-auth.md "Forgot password and reset": the mail\'s link sets a new password and signs in; the old password stops working; a used or bad link is "not valid any more"', async () => {
      const user = await verifiedUser(s.t);
      const email = user.user.email;
      const newPassword = "a brand new passphrase";
      const page = await s.newPage();
      await page.goto("/sign-in");
      await page.getByRole("link", { name: "Forgot your password?" }).click();
      await page.getByRole("heading", { name: "Reset your password" }).waitFor();
      await page.getByLabel("Email").fill(email);
      await page.getByRole("button", { name: "Send the link" }).click();
      await page
        .getByText("If an account has this address, a link to choose a new password is on its way.")
        .waitFor();

      const link = await s.mailLink(email, "reset-password");
      await page.goto(link);
      await page.getByRole("heading", { name: "Choose a new password" }).waitFor();
      await page.getByLabel("New password").fill(newPassword);
      await page.getByRole("button", { name: "Save the new password" }).click();
      await page.locator(".composer textarea").waitFor();
      expect(pathOf(page)).toBe("/");
      expect(new URL(page.url()).search).toBe("");
      // The reset revoked every refresh token the account had before (docs/app-auth.md).
      expect((await postJson(s.t, "/auth/refresh", { refresh_token: user.refresh_token })).status).toBe(401);

      await page.getByRole("link", { name: "Settings" }).click();
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByText("You are signed out.").waitFor();

      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByText("Wrong email or password.").waitFor();
      expect(await storedSession(page)).toBeNull();
      await page.getByLabel("Password").fill(newPassword);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator(".composer textarea").waitFor();
      await page.getByRole("link", { name: "Settings" }).click();
      await page.getByText(`Signed in as ${email}`).waitFor();

      // The link works once: used again (even while signed in) it changes nothing.
      await page.goto(link);
      await page.getByLabel("New password").fill("yet another passphrase");
      await page.getByRole("button", { name: "Save the new password" }).click();
      await page.getByText("This link is not valid any more. Ask for a new one.").waitFor();
      await page.getByRole("link", { name: "Forgot your password?" }).waitFor();
      expect((await postJson(s.t, "/auth/login", { email, password: newPassword })).status).toBe(200);

      const stranger = await s.newPage();
      await stranger.goto("/reset-password?token=zpr_not-a-real-token");
      await stranger.getByLabel("New password").fill("yet another passphrase");
      await stranger.getByRole("button", { name: "Save the new password" }).click();
      await stranger.getByText("This link is not valid any more. Ask for a new one.").waitFor();
      expect(await storedSession(stranger)).toBeNull();
      await stranger.goto("/reset-password");
      await stranger.getByText("This link is not valid any more. Ask for a new one.").waitFor();
      expectNoProblems(s);
    });

    it('issue 14, docs/app-auth.md "Verify email": a bad link says so; an unverified user sees "Confirm your email address" at every address; "Send the link again" sends a second mail', async () => {
      const page = await s.newPage();
      await page.goto("/verify-email?token=zev_not-a-real-token");
      await page
        .getByText("This confirmation link is not valid or has expired. Sign in and ask for a new one.")
        .waitFor();
      // The token leaves the address bar once read.
      expect(new URL(page.url()).search).toBe("");

      const email = newEmail("web-verify");
      await page.goto("/register");
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { name: "Confirm your email address" }).waitFor();
      await page.getByText(`We sent a link to ${email}.`).waitFor();

      for (const address of [
        "/",
        "/settings",
        "/archived",
        `/c/${randomUUID()}`,
        "/kb",
        "/kb/x",
        "/sign-in",
      ]) {
        await page.goto(address);
        await page.getByRole("heading", { name: "Confirm your email address" }).waitFor();
        expect(pathOf(page), address).toBe("/check-mail");
      }
      await page.getByRole("button", { name: "I have confirmed it" }).click();
      await page.getByText("Your address is not confirmed yet.").waitFor();

      // Within the minute of the first mail: one mail a minute per account (429, the wait is told).
      await page.getByRole("button", { name: "Send the link again" }).click();
      await page
        .getByRole("alert")
        .getByText(/^Too many requests\. Try again in \d+ seconds\.$/)
        .waitFor();
      expect(await mailsTo(s.t, email)).toHaveLength(1);

      // A minute later (the first link's time moved back), the page sends a second mail.
      const session = await storedSession(page);
      const me = await callApi(s, "GET", "/web/me", session?.accessToken);
      await s.t.store.db
        .update(emailTokens)
        .set({ createdAt: new Date(Date.now() - 2 * 60_000) })
        .where(eq(emailTokens.accountId, String(me.body.id)));
      await page.getByRole("button", { name: "Send the link again" }).click();
      await page.getByText("A new link is on its way.").waitFor();
      await expect.poll(async () => (await mailsTo(s.t, email)).length, POLL).toBe(2);

      // The newest link confirms the address; the page goes on to the chat.
      await page.goto(await s.mailLink(email, "verify-email"));
      await page.getByText(`Your email address ${email} is confirmed.`).waitFor();
      await page.getByRole("link", { name: "Start chatting" }).click();
      await page.locator(".composer textarea").waitFor();
      expect(pathOf(page)).toBe("/");
      expectNoProblems(s);
    });

    it('issue 14, spec "States and transitions" (refresh token): a stale access token is refreshed transparently and the new pair kept; a retired refresh token used again revokes the account\'s tokens and the page signs out cleanly', async () => {
      const page = await s.newPage();
      const refreshes: string[] = [];
      page.on("request", (request) => {
        if (request.url().endsWith("/api/v1/auth/refresh")) refreshes.push(request.method());
      });
      const { email } = await s.signIn(page);
      const first = await storedSession(page);
      expect(first?.refreshToken).toMatch(/^zrt_/);

      // An access token the server refuses: the call gets 401, the page refreshes once and calls again.
      await patchSession(page, { accessToken: "zat_garbage.garbage" });
      await sendAndGetAnswer(page, "after a refused access token");
      const second = await storedSession(page);
      expect(refreshes).toHaveLength(1);
      expect(second?.refreshToken).toMatch(/^zrt_/);
      expect(second?.refreshToken).not.toBe(first?.refreshToken);
      expect(second?.accessToken).not.toBe("zat_garbage.garbage");
      expect(second?.accessExpiresAt).toBeGreaterThan(Date.now() + 3600_000);
      // The page's old refresh token is retired by the rotation.
      expect(pathOf(page)).toMatch(/^\/c\//);

      // An access token about to run out: refreshed before the call, which is never refused.
      await patchSession(page, { accessExpiresAt: Date.now() - 1000 });
      await sendAndGetAnswer(page, "after an expired access token");
      const third = await storedSession(page);
      expect(refreshes).toHaveLength(2);
      expect(third?.refreshToken).not.toBe(second?.refreshToken);

      // Someone else uses the page's refresh token first: the page's token is now a retired one.
      const stolen = await postJson(s.t, "/auth/refresh", { refresh_token: third?.refreshToken });
      expect(stolen.status).toBe(200);
      const stolenPair = (await stolen.json()) as LoginBody;
      await page.locator(".composer textarea").fill("this one should not be sent");
      await patchSessionAndSend(page, { accessExpiresAt: Date.now() - 1000 });
      await page.getByText("Your session ended. Please sign in again.").waitFor();
      expect(pathOf(page)).toBe("/sign-in");
      expect(await storedSession(page)).toBeNull();
      expect(refreshes).toHaveLength(3);
      // The reuse revoked every refresh token of the account, the other party's new one too.
      expect((await postJson(s.t, "/auth/refresh", { refresh_token: stolenPair.refresh_token })).status).toBe(
        401,
      );
      // Nothing was sent with the old access token after the session ended.
      const conversations = await callApi(s, "GET", "/chat/sessions", stolenPair.access_token);
      expect(conversations.status).toBe(200);
      const listed = conversations.body as unknown as Array<{ id: string }>;
      expect(listed).toHaveLength(1);
      const conversation = await callApi(
        s,
        "GET",
        `/chat/sessions/${listed[0]?.id}`,
        stolenPair.access_token,
      );
      const contents = (conversation.body.messages as Array<{ content: string }>).map((m) => m.content);
      expect(contents).not.toContain("this one should not be sent");

      // The notice stays while the page is on the sign-in screen, and signing in again works.
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator(".composer textarea").waitFor();
      expect((await storedSession(page))?.refreshToken).toMatch(/^zrt_/);
      expectNoProblems(s);
    });

    it('issue 14, docs/app-auth.md "Refresh rotation": two tabs whose access token is refused at once refresh once (Web Locks), both keep working, nobody is signed out', async () => {
      const first = await s.newPage();
      await s.signIn(first);
      const context = first.context();
      const second = await context.newPage();
      watch(second);
      await second.goto("/");
      await second.locator(".composer textarea").waitFor();
      const before = await storedSession(first);

      // Hold the first refresh until both tabs had their call refused, so the two overlap for sure.
      let refused = 0;
      let bothRefused: () => void = () => {};
      const both = new Promise<void>((resolve) => {
        bothRefused = resolve;
      });
      context.on("response", (response) => {
        const url = response.url();
        if (response.status() === 401 && url.includes("/api/v1/") && !url.endsWith("/auth/refresh")) {
          refused += 1;
          if (refused === 2) bothRefused();
        }
      });
      let refreshes = 0;
      await context.route("**/api/v1/auth/refresh", async (route) => {
        refreshes += 1;
        await Promise.race([both, new Promise((resolve) => setTimeout(resolve, 10_000))]);
        await route.continue();
      });

      await patchSession(first, { accessToken: "zat_garbage.garbage" });
      await Promise.all([
        sendAndGetAnswer(first, "from the first tab"),
        sendAndGetAnswer(second, "from the second tab"),
      ]);
      expect(refused).toBe(2);
      expect(refreshes).toBe(1);
      const after = await storedSession(second);
      expect(after?.refreshToken).not.toBe(before?.refreshToken);
      expect(pathOf(first)).toMatch(/^\/c\//);
      expect(pathOf(second)).toMatch(/^\/c\//);

      // The session survived on the server: both tabs load again signed in, with no further refresh.
      await first.reload();
      await first.locator(".composer textarea").waitFor();
      await second.reload();
      await second.locator(".composer textarea").waitFor();
      expect(refreshes).toBe(1);
      expect((await storedSession(first))?.refreshToken).toBe(after?.refreshToken);
      expectNoProblems(s);
    });

    it("issue 14: tabs follow each other's sign-out, sign-in and change of account; the next account signed in sees none of the first account's conversations", async () => {
      const first = await s.newPage();
      const firstAccount = await s.signIn(first);
      await sendAndGetAnswer(first, "a conversation of the first account");
      await expect.poll(() => first.locator(".conversation-list li").count(), POLL).toBe(1);
      const second = await first.context().newPage();
      watch(second);
      await second.goto("/");
      await expect.poll(() => second.locator(".conversation-list li").count(), POLL).toBe(1);

      await first.getByRole("link", { name: "Settings" }).click();
      await first.getByRole("button", { name: "Sign out" }).click();
      await first.getByText("You are signed out.").waitFor();
      await expect.poll(() => pathOf(second), POLL).toBe("/sign-in");

      // Another account signs in on the same page, without loading it again.
      const other = await verifiedUser(s.t);
      await first.getByLabel("Email").fill(other.user.email);
      await first.getByLabel("Password").fill(PASSWORD);
      await first.getByRole("button", { name: "Sign in" }).click();
      await first.locator(".composer textarea").waitFor();
      await first.getByText("No conversations yet.").waitFor();
      expect(await first.locator(".conversation-list li").count()).toBe(0);
      await first.getByRole("link", { name: "Settings" }).click();
      await first.getByText(`Signed in as ${other.user.email}`).waitFor();
      // The other tab, on the sign-in screen, follows the sign-in.
      await second.locator(".composer textarea").waitFor();
      await second.getByText("No conversations yet.").waitFor();
      await expect.poll(() => pathOf(second), POLL).toBe("/");

      // The first account's password reset link, opened in the second tab, signs that account in
      // there: the first tab changes account too, and shows that account's conversations only.
      await postJson(s.t, "/auth/forgot-password", { email: firstAccount.email });
      await second.goto(await s.mailLink(firstAccount.email, "reset-password"));
      await second.getByLabel("New password").fill("the first account's new passphrase");
      await second.getByRole("button", { name: "Save the new password" }).click();
      await expect.poll(() => second.locator(".conversation-list li").count(), POLL).toBe(1);
      await expect.poll(() => first.locator(".conversation-list li").count(), POLL).toBe(1);
      await first.getByRole("link", { name: "Settings" }).click();
      await first.getByText(`Signed in as ${firstAccount.email}`).waitFor();
      expectNoProblems(s);
    });

    it('issue 14, spec "App API": an account\'s language (de, fr, it) sets the texts after sign-in', async () => {
      const expected = {
        de: { send: "Senden", newChat: "Neuer Chat", settings: "Einstellungen" },
        fr: { send: "Envoyer", newChat: "Nouvelle discussion", settings: "Paramètres" },
        it: { send: "Invia", newChat: "Nuova chat", settings: "Impostazioni" },
      } as const;
      for (const [language, texts] of Object.entries(expected)) {
        const page = await s.newPage();
        await s.signIn(page, { language });
        await page.getByRole("button", { name: texts.send }).waitFor();
        await page.getByRole("link", { name: texts.newChat }).waitFor();
        await page.getByRole("link", { name: texts.settings }).waitFor();
        expect(await page.locator("html").getAttribute("lang")).toBe(language);
      }
      expectNoProblems(s);
    });

    it('issue 14, spec "App API" (PATCH /web/me): changing the language in Settings switches the texts at once and sticks after a reload', async () => {
      const page = await s.newPage();
      await s.signIn(page, { language: "de" });
      await page.getByRole("link", { name: "Einstellungen" }).click();
      await page.getByRole("heading", { name: "Einstellungen", level: 1 }).waitFor();
      await page.getByLabel("Sprache").selectOption("fr");
      // At once, without a reload.
      await page.getByRole("heading", { name: "Paramètres", level: 1 }).waitFor();
      await page.getByRole("link", { name: "Nouvelle discussion" }).waitFor();
      expect(await page.locator("html").getAttribute("lang")).toBe("fr");
      expect(await page.getByLabel("Langue").inputValue()).toBe("fr");
      const session = await storedSession(page);
      const me = await callApi(s, "GET", "/web/me", session?.accessToken);
      expect(me.body.language).toBe("fr");

      // After a reload it comes from the account, not from what this browser remembers.
      await page.evaluate(() => localStorage.removeItem("zona.language"));
      await page.reload();
      await page.getByRole("heading", { name: "Paramètres", level: 1 }).waitFor();
      expect(await page.locator("html").getAttribute("lang")).toBe("fr");

      // Romansh reads Italian; the picker shows Italian for it.
      await callApi(s, "PATCH", "/web/me", session?.accessToken, { language: "rm" });
      await page.reload();
      await page.getByRole("heading", { name: "Impostazioni", level: 1 }).waitFor();
      expect(await page.getByLabel("Lingua").inputValue()).toBe("it");
      expectNoProblems(s);
    });

    it("issue 14: before sign-in the page speaks the browser's language (fr-FR, de-CH, rm), else the installation's", async () => {
      const cases = [
        { locale: "fr-FR", lang: "fr", title: "Se connecter à Zona", button: "Se connecter" },
        { locale: "de-CH", lang: "de", title: "Bei Zona anmelden", button: "Anmelden" },
        { locale: "rm-CH", lang: "it", title: "Accedi a Zona", button: "Accedi" },
        // Spanish is not spoken: the installation's language (en in the stack).
        { locale: "es-ES", lang: "en", title: "Sign in to Zona", button: "Sign in" },
      ];
      for (const one of cases) {
        const page = await pageWithLocale(one.locale);
        await page.goto("/");
        await page.getByRole("heading", { name: one.title }).waitFor();
        await page.getByRole("button", { name: one.button, exact: true }).waitFor();
        expect(await page.locator("html").getAttribute("lang"), one.locale).toBe(one.lang);
      }

      // A language picked on the sign-in screen is kept for the next visit and given to a new account.
      const page = await pageWithLocale("fr-FR");
      await page.goto("/register");
      await page.getByLabel("Langue").selectOption("de");
      await page.getByRole("heading", { name: "Eröffnen Sie Ihr Konto" }).waitFor();
      await page.reload();
      await page.getByRole("heading", { name: "Eröffnen Sie Ihr Konto" }).waitFor();
      const email = newEmail("web-lang");
      await page.getByLabel("E-Mail").fill(email);
      await page.getByLabel("Passwort").fill(PASSWORD);
      await page.getByRole("button", { name: "Konto eröffnen" }).click();
      await page.getByRole("heading", { name: "Bestätigen Sie Ihre E-Mail-Adresse" }).waitFor();
      const session = await storedSession(page);
      expect((await callApi(s, "GET", "/web/me", session?.accessToken)).body.language).toBe("de");
      expectNoProblems(s);
    });

    it('issue 14, spec "App API": GET/PATCH /api/v1/web/me over HTTP: the shape, 422 validation_error on a bad language, 401 without a token, open to an unverified user', async () => {
      const unverified = await register(s.t, { language: "en" });
      const token = unverified.access_token;
      const me = await callApi(s, "GET", "/web/me", token);
      expect(me.status).toBe(200);
      expect(me.body).toEqual({
        id: unverified.user.id,
        email: unverified.user.email,
        email_verified: false,
        language: "en",
      });

      const changed = await callApi(s, "PATCH", "/web/me", token, { language: "de" });
      expect(changed.status).toBe(200);
      expect(changed.body).toEqual({ ...me.body, language: "de" });
      expect((await callApi(s, "GET", "/web/me", token)).body.language).toBe("de");

      for (const bad of [{ language: "xx" }, { language: "" }, { language: 3 }, {}]) {
        const refused = await callApi(s, "PATCH", "/web/me", token, bad);
        expect(refused.status, JSON.stringify(bad)).toBe(422);
        expect((refused.body.error as { code: string }).code).toBe("validation_error");
        expect(Object.keys(refused.body.errors as object)).toEqual(["language"]);
      }
      expect((await callApi(s, "GET", "/web/me", token)).body.language).toBe("de");

      for (const [method, body] of [
        ["GET", undefined],
        ["PATCH", { language: "fr" }],
      ] as const) {
        const anonymous = await callApi(s, method, "/web/me", undefined, body);
        expect(anonymous.status).toBe(401);
        expect((anonymous.body.error as { code: string }).code).toBe("unauthorized");
        const wrong = await callApi(s, method, "/web/me", "zat_garbage.garbage", body);
        expect(wrong.status).toBe(401);
        const { key } = await s.t.newKey();
        const withKey = await callApi(s, method, "/web/me", key, body);
        expect(withKey.status).toBe(401);
      }
      // The unverified user may not use the rest of the app API.
      expect((await callApi(s, "GET", "/chat/sessions", token)).status).toBe(403);
    });
  },
);
