import type { BrowserContext, Page } from "playwright-core";
import type { WebStack } from "./web-stack.ts";

// The browser globals the code run in the page reads (the tests compile without the DOM library).
declare const document: { querySelector(selector: string): { requestSubmit(): void } | null };

export interface StoredSession {
  accessToken: string;
  refreshToken: string;
  accessExpiresAt: number;
}

/** The session the page keeps in localStorage (`zona.session`), or null. */
export function storedSession(page: Page): Promise<StoredSession | null> {
  return page.evaluate(() => {
    const text = localStorage.getItem("zona.session");
    return text ? (JSON.parse(text) as StoredSession) : null;
  });
}

/** Changes the stored session behind the page's back (no storage event reaches the page itself). */
export async function patchSession(page: Page, patch: Partial<StoredSession>): Promise<void> {
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
export async function patchSessionAndSend(page: Page, patch: Partial<StoredSession>): Promise<void> {
  await page.evaluate((change) => {
    const text = localStorage.getItem("zona.session");
    if (!text) throw new Error("no session stored");
    localStorage.setItem("zona.session", JSON.stringify({ ...JSON.parse(text), ...change }));
    const form = document.querySelector("form.composer");
    if (!form) throw new Error("no composer");
    form.requestSubmit();
  }, patch);
}

/** Calls the app API over HTTP with a bearer token; JSON out. */
export async function callApi(
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

/** Pages in browser contexts of their own (another locale), watched like the stack's pages; `close()` ends them. */
export function extraPages(stack: () => WebStack) {
  const contexts: BrowserContext[] = [];
  const watch = (page: Page): void => {
    page.on("pageerror", (error) => stack().problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text()))
        stack().problems.push(`csp: ${message.text()}`);
    });
  };
  return {
    watch,
    /** A context of the stack's browser with its own locale. */
    async pageWithLocale(locale: string): Promise<Page> {
      const context = await stack().browser.newContext({ baseURL: stack().t.url, locale });
      contexts.push(context);
      const page = await context.newPage();
      watch(page);
      return page;
    },
    async close(): Promise<void> {
      for (const context of contexts) await context.close().catch(() => {});
    },
  };
}
