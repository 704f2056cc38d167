import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailTokens } from "../../src/store/schema.ts";
import { mailsTo, newEmail, PASSWORD, postJson, register, verifiedUser } from "../app/auth-fixtures.ts";
import { callApi, extraPages, storedSession } from "./web-auth-helpers.ts";
import { POLL, pathOf } from "./web-page.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

describe.skipIf(!CHROMIUM)(
  "Web chat sign-in pages and language in Chromium (spec Authentication / App API)",
  // Each test signs in through the page a few times (password hashing): room for a loaded machine.
  { timeout: 90_000 },
  () => {
    let s: WebStack;
    const extra = extraPages(() => s);
    const { pageWithLocale } = extra;
    beforeAll(async () => {
      s = await startWebStack();
    }, 60_000);
    afterAll(async () => {
      await extra.close();
      await s?.close();
    });

    it('docs/app-auth.md "Forgot password and reset": the mail\'s link sets a new password and signs in; the old password stops working; a used or bad link is "not valid any more"', async () => {
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

    it('docs/app-auth.md "Verify email": a bad link says so; an unverified user sees "Confirm your email address" at every address; "Send the link again" sends a second mail', async () => {
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

    it('spec "App API": an account\'s language (de, fr, it) sets the texts after sign-in', async () => {
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

    it('spec "App API" (PATCH /web/me): changing the language in Settings switches the texts at once and sticks after a reload', async () => {
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

    it("before sign-in the page speaks the browser's language (fr-FR, de-CH, rm), else the installation's", async () => {
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

    it('spec "App API": GET/PATCH /api/v1/web/me over HTTP: the shape, 422 validation_error on a bad language, 401 without a token, open to an unverified user', async () => {
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
