import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POLL, sendAndGetAnswer } from "./web-page.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

describe.skipIf(!CHROMIUM)(
  "Web chat: the whole journey in Chromium (spec Authentication / App API, Chat sessions)",
  () => {
    let s: WebStack;
    beforeAll(async () => {
      s = await startWebStack();
    }, 60_000);
    afterAll(() => s?.close());

    it("register -> verification link from the outbox -> sign in -> new conversation -> streamed answer -> rename -> archive -> unarchive -> delete -> sign out", async () => {
      const page = await s.newPage();
      const email = `journey-${Date.now()}@example.com`;
      await page.goto("/");
      await expect.poll(() => new URL(page.url()).pathname).toBe("/sign-in");
      await page.getByRole("heading", { name: "Sign in to Zona" }).waitFor();
      await page.screenshot({ path: s.screenshotPath("sign-in") });
      await page.getByRole("link", { name: "Create account" }).click();
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill("correct horse battery");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { name: "Confirm your email address" }).waitFor();
      await page.screenshot({ path: s.screenshotPath("check-mail") });

      // The link of the verification mail, opened in the same browser.
      await page.goto(await s.mailLink(email, "verify-email"));
      await page.getByText(`Your email address ${email} is confirmed.`).waitFor();
      expect(new URL(page.url()).search).toBe("");
      await page.getByRole("link", { name: "Start chatting" }).click();

      await sendAndGetAnswer(page, "Hello there, Zona!");
      await expect.poll(() => new URL(page.url()).pathname, POLL).toMatch(/^\/c\/[0-9a-f-]{36}$/);
      // The automatic title replaces the default one without a reload.
      const title = page.locator(".conversation-title");
      await expect.poll(() => title.innerText(), { timeout: 15_000 }).not.toBe("New chat");
      await expect
        .poll(() => page.locator(".conversation-link.current").innerText())
        .toBe(await title.innerText());
      await page.screenshot({ path: s.screenshotPath("conversation") });

      await page.getByRole("button", { name: "Rename" }).click();
      await page.getByLabel("Title").fill("My renamed chat");
      await page.getByRole("button", { name: "Save" }).click();
      await expect.poll(() => title.innerText()).toBe("My renamed chat");
      await expect.poll(() => page.locator(".conversation-link.current").innerText()).toBe("My renamed chat");

      await page.getByRole("button", { name: "Archive", exact: true }).click();
      await page.getByText("This conversation is archived.").waitFor();
      await expect.poll(() => page.locator(".conversation-list li").count()).toBe(0);
      // The sidebar says where the conversations went, not that there are none.
      const sidebar = page.locator(".sidebar");
      await sidebar.getByText("No open conversations: all of them are archived.").waitFor();
      await page.getByRole("link", { name: /^Archived/ }).click();
      await sidebar.getByText("No open conversations: all of them are archived.").waitFor();
      expect(await sidebar.getByText("No conversations yet.").count()).toBe(0);
      await page.getByRole("link", { name: "My renamed chat" }).click();
      await page.getByRole("button", { name: "Unarchive" }).click();
      await expect.poll(() => page.locator(".conversation-list li").count()).toBe(1);

      await page.getByRole("button", { name: "Delete" }).click();
      const dialog = page.getByRole("dialog");
      await dialog.getByRole("button", { name: "Delete" }).click();
      await expect.poll(() => new URL(page.url()).pathname).toBe("/");
      await expect.poll(() => page.locator(".conversation-list li").count()).toBe(0);

      await page.getByRole("link", { name: "Settings" }).click();
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByText("You are signed out.").waitFor();
      expect(await page.evaluate(() => localStorage.getItem("zona.session"))).toBeNull();
      expectNoProblems(s);
      // The whole journey: dozens of screens and a title written by a job, on a machine the suite keeps busy.
    }, 90_000);
  },
);
