import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import { PASSWORD, postJson, verifiedUser } from "../app/auth-fixtures.ts";
import { callApi, extraPages, patchSession, patchSessionAndSend, storedSession } from "./web-auth-helpers.ts";
import { POLL, pathOf, sendAndGetAnswer } from "./web-page.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

describe.skipIf(!CHROMIUM)(
  "Web chat sessions in Chromium (spec Authentication / App API, States and transitions: refresh tokens)",
  // Each test signs in through the page a few times (password hashing): room for a loaded machine.
  { timeout: 90_000 },
  () => {
    let s: WebStack;
    const extra = extraPages(() => s);
    const { watch } = extra;
    beforeAll(async () => {
      s = await startWebStack();
    }, 60_000);
    afterAll(async () => {
      await extra.close();
      await s?.close();
    });

    it('spec "States and transitions" (refresh token): a stale access token is refreshed transparently and the new pair kept; a retired refresh token used again revokes the account\'s tokens and the page signs out cleanly', async () => {
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
      const stolenPair = (await stolen.json()) as LoginResponse;
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

    it('docs/app-auth.md "Refresh rotation": two tabs whose access token is refused at once refresh once (Web Locks), both keep working, nobody is signed out', async () => {
      const first = await s.newPage();
      await s.signIn(first);
      const context = first.context();
      const second = await context.newPage();
      watch(second);
      await second.goto("/");
      await second.locator(".composer textarea").waitFor();
      // Both tabs have their models: the only calls the stale token meets are the two sends.
      for (const page of [first, second]) {
        await expect.poll(() => page.locator('select[name="model"]').inputValue(), POLL).not.toBe("");
      }
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

    it("tabs follow each other's sign-out, sign-in and change of account; the next account signed in sees none of the first account's conversations", async () => {
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
  },
);
