import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pathOf } from "./web-page.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

// The browser globals the code run in the page reads (the tests compile without the DOM library).
declare const window: {
  innerWidth: number;
  innerHeight: number;
  visualViewport: { width: number; height: number } | null;
};
declare const document: {
  documentElement: { scrollWidth: number };
  body: { scrollWidth: number };
  activeElement: { tagName: string } | null;
};

/** Room for a loaded two-core machine: expect.poll gives up after one second by default. */
const POLL = { timeout: 15_000 };
const PHONE = { width: 390, height: 844 };
/** The height left when the on-screen keyboard takes about half of the screen. */
const WITH_KEYBOARD = 420;

/** Whether the page scrolls sideways (it must not on a phone). */
function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(
    () =>
      document.documentElement.scrollWidth > window.innerWidth ||
      document.body.scrollWidth > window.innerWidth,
  );
}

/** The element's box lies wholly inside the visible viewport (the visual one, as with a keyboard). */
async function insideViewport(page: Page, locator: Locator): Promise<boolean> {
  const box = await locator.boundingBox();
  if (!box) return false;
  const view = await page.evaluate(() => ({
    width: window.visualViewport?.width ?? window.innerWidth,
    height: window.visualViewport?.height ?? window.innerHeight,
  }));
  return (
    box.x >= 0 &&
    box.y >= 0 &&
    box.x + box.width <= view.width + 0.5 &&
    box.y + box.height <= view.height + 0.5
  );
}

describe.skipIf(!CHROMIUM)("Web chat on a phone in Chromium (the phone layout)", { timeout: 90_000 }, () => {
  let s: WebStack;
  beforeAll(async () => {
    s = await startWebStack();
  }, 60_000);
  afterAll(() => s?.close());

  it("phone viewport 390x844: the sidebar is a drawer behind the menu button that closes on navigation; the composer stays usable with the keyboard open; nothing scrolls sideways", async () => {
    const page = await s.newPage({ viewport: PHONE, isMobile: true, hasTouch: true });
    await s.signIn(page);
    const sidebar = page.locator("#sidebar");
    const menu = page.getByRole("button", { name: "Menu" });
    const textarea = page.getByLabel("Message");
    const send = page.getByRole("button", { name: "Send" });

    // The sidebar is hidden; the menu button shows it.
    await menu.waitFor();
    expect(await sidebar.isVisible()).toBe(false);
    expect(await menu.getAttribute("aria-expanded")).toBe("false");
    expect(await insideViewport(page, textarea)).toBe(true);
    expect(await insideViewport(page, send)).toBe(true);
    expect(await scrollsSideways(page)).toBe(false);
    // The model and speed pickers keep their visible labels on a phone.
    for (const label of ["Model", "Speed"]) {
      const text = page.locator(".composer-pickers .picker span", { hasText: label });
      await expect.poll(() => insideViewport(page, text), POLL).toBe(true);
    }

    await menu.tap();
    await expect.poll(() => insideViewport(page, sidebar), POLL).toBe(true);
    expect(await menu.getAttribute("aria-expanded")).toBe("true");
    // A tap beside the drawer closes it.
    await page.touchscreen.tap(PHONE.width - 10, PHONE.height / 2);
    await expect.poll(() => sidebar.isVisible(), POLL).toBe(false);

    // Going to another screen from the drawer closes it.
    await menu.tap();
    await sidebar.getByRole("link", { name: "Settings" }).tap();
    await page.getByRole("heading", { name: "Settings", level: 1 }).waitFor();
    await expect.poll(() => sidebar.isVisible(), POLL).toBe(false);
    expect(await scrollsSideways(page)).toBe(false);
    await menu.tap();
    await sidebar.getByRole("link", { name: "New chat" }).tap();
    await expect.poll(() => pathOf(page), POLL).toBe("/");
    await expect.poll(() => sidebar.isVisible(), POLL).toBe(false);
    // Also when the link leads to the screen already shown.
    await menu.tap();
    await expect.poll(() => sidebar.isVisible(), POLL).toBe(true);
    await sidebar.getByRole("link", { name: "New chat" }).tap();
    await expect.poll(() => sidebar.isVisible(), POLL).toBe(false);

    // A message sent from the phone.
    await textarea.tap();
    await textarea.fill("Hello from a phone");
    await send.tap();
    const answer = page.locator(".message.assistant").last();
    await expect.poll(() => answer.innerText(), POLL).toContain("echo: Hello from a phone");
    await expect.poll(() => page.locator(".message.assistant.streaming").count(), POLL).toBe(0);
    await expect.poll(() => pathOf(page), POLL).toMatch(/^\/c\//);
    expect(await scrollsSideways(page)).toBe(false);

    // The on-screen keyboard takes half the screen: the box and Send stay in view and still work.
    await textarea.tap();
    await page.setViewportSize({ width: PHONE.width, height: WITH_KEYBOARD });
    await expect.poll(() => insideViewport(page, textarea), POLL).toBe(true);
    expect(await insideViewport(page, send)).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("TEXTAREA");
    await page.keyboard.type("Still here with the keyboard open");
    await expect.poll(() => insideViewport(page, send), POLL).toBe(true);
    await send.tap();
    const second = page.locator(".message.assistant").nth(1);
    await expect.poll(() => second.innerText(), POLL).toContain("echo: Still here with the keyboard open");
    await expect.poll(() => page.locator(".message.assistant.streaming").count(), POLL).toBe(0);
    // The newest answer is the one in view, above the composer.
    await expect.poll(() => insideViewport(page, second), POLL).toBe(true);
    expect(await insideViewport(page, textarea)).toBe(true);
    expect(await scrollsSideways(page)).toBe(false);

    // Keyboard closed again: a long message without spaces does not widen the page either.
    await page.setViewportSize(PHONE);
    await textarea.fill(`${"x".repeat(300)} https://example.com/${"a".repeat(200)}`);
    await send.tap();
    await expect.poll(() => page.locator(".message.assistant").count(), POLL).toBe(3);
    await expect.poll(() => page.locator(".message.assistant.streaming").count(), POLL).toBe(0);
    expect(await scrollsSideways(page)).toBe(false);
    expect(await insideViewport(page, textarea)).toBe(true);
    await page.screenshot({ path: s.screenshotPath("phone") });

    // The drawer lists the conversation and opens it.
    await menu.tap();
    await sidebar.locator(".conversation-link").first().tap();
    await expect.poll(() => sidebar.isVisible(), POLL).toBe(false);
    expect(await scrollsSideways(page)).toBe(false);
    expectNoProblems(s);
  });

  it("phone viewport: the screens before sign-in fit the width and the form is usable", async () => {
    const page = await s.newPage({ viewport: PHONE, isMobile: true, hasTouch: true });
    for (const address of ["/sign-in", "/register", "/forgot-password", "/reset-password?token=x"]) {
      await page.goto(address);
      await page.locator(".auth-card h1").waitFor();
      expect(await scrollsSideways(page), address).toBe(false);
      for (const field of await page.locator(".auth-card input").all()) {
        expect(await insideViewport(page, field), address).toBe(true);
      }
    }
    expectNoProblems(s);
  });
});
