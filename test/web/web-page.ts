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

/**
 * Runs a wait; when it fails, its error also says what the page shows (its notices and the
 * composer's state), so a failure on a loaded machine tells why.
 */
export async function explained<T>(page: Page, wait: () => Promise<T>): Promise<T> {
  try {
    return await wait();
  } catch (error) {
    const notices = await page
      .locator(".notice, .field-error")
      .allInnerTexts()
      .catch(() => []);
    const send = await page
      .locator(".composer button.send")
      .isEnabled({ timeout: 1_000 })
      .catch(() => undefined);
    const messages = await page
      .locator(".message")
      .evaluateAll((elements) => elements.map((element) => element.className))
      .catch(() => []);
    const said =
      `page ${pathOf(page)}; notices: ${JSON.stringify(notices)}; send enabled: ${send}; ` +
      `messages: ${JSON.stringify(messages)}`;
    if (error instanceof Error) error.message = `${error.message}\n${said}`;
    throw error;
  }
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
  // The page knows the models (an Enter pressed before would send once they came: tested on its own).
  await explained(page, () =>
    expect.poll(() => page.locator(".composer button.send").isEnabled(), POLL).toBe(true),
  );
  await page.locator(".composer textarea").press("Enter");
  await explained(page, () =>
    expect.poll(() => page.locator(".message.assistant").count(), POLL).toBe(before + 1),
  );
  if (options.echoed) {
    await expect
      .poll(() => page.locator(".message.assistant").last().innerText(), POLL)
      .toContain(`echo: ${text}`);
  }
  await expect.poll(() => page.locator(".message.assistant.streaming").count(), POLL).toBe(0);
}
