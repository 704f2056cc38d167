import type { Page } from "playwright-core";
import { expect } from "vitest";

/** Room for a loaded two-core machine: expect.poll gives up after one second by default. */
export const POLL = { timeout: 15_000 };

/** The path of the page's address. */
export function pathOf(page: Page): string {
  return new URL(page.url()).pathname;
}

/** The id of the conversation the page shows (after the first message created it). */
export async function conversationId(page: Page): Promise<string> {
  await expect.poll(() => pathOf(page), POLL).toMatch(/^\/c\/[0-9a-f-]{36}$/);
  return pathOf(page).slice(3);
}

/** Waits until no answer is arriving any more. */
export async function answered(page: Page): Promise<void> {
  await expect.poll(() => page.locator(".message.assistant").count(), POLL).toBeGreaterThan(0);
  await expect.poll(() => page.locator(".message.assistant.streaming").count(), { timeout: 20_000 }).toBe(0);
}

/**
 * Sends a message through the composer (Enter) and waits for the answer to be complete; with
 * `echoed` (plain text only: Markdown is rendered) also for the fake model's echo of it.
 */
export async function sendAndGetAnswer(page: Page, text: string, options = { echoed: true }): Promise<void> {
  const before = await page.locator(".message.assistant").count();
  await page.locator(".composer textarea").fill(text);
  // Enter sends only once the page knows the models (a Send button still disabled ignores it).
  await expect.poll(() => page.locator(".composer button.send").isEnabled(), POLL).toBe(true);
  await page.locator(".composer textarea").press("Enter");
  await expect.poll(() => page.locator(".message.assistant").count(), POLL).toBe(before + 1);
  if (options.echoed) {
    await expect
      .poll(() => page.locator(".message.assistant").last().innerText(), POLL)
      .toContain(`echo: ${text}`);
  }
  await expect.poll(() => page.locator(".message.assistant.streaming").count(), POLL).toBe(0);
}
