import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import { mailsTo, PASSWORD, TRUSTED_LOOPBACK, verifiedUser } from "../app/auth-fixtures.ts";
import {
  FakeModerationServer,
  FakeOpenAiServer,
  FakePiperServer,
  FakeTeiServer,
  FakeWhisperServer,
} from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

/** The chat models of the web stack: one served, one served on request and never activated. */
export const CHAT_MODEL = "gemma3.8-27b";
export const SECOND_MODEL = "small-chat";
export const ON_REQUEST_MODEL = "big-chat-on-request";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/lib/chromium/chromium"];

/** Debian's Chromium (`CHROMIUM_PATH` to point elsewhere); undefined when none is installed. */
export const CHROMIUM: string | undefined = [process.env.CHROMIUM_PATH, ...CANDIDATES].find(
  (candidate): candidate is string => candidate !== undefined && candidate !== "" && existsSync(candidate),
);

if (!CHROMIUM) {
  console.warn(
    "web chat browser tests SKIPPED: no Chromium found (install Debian's chromium package, or set CHROMIUM_PATH); .ci/run installs it",
  );
}

/** The service with fake engines behind it (chat, transcription, speech, embeddings) and a headless Chromium. */
export interface WebStack {
  t: TestApp;
  chat: FakeOpenAiServer;
  whisper: FakeWhisperServer;
  fallbackWhisper: FakeWhisperServer;
  piper: FakePiperServer;
  tei: FakeTeiServer;
  browser: Browser;
  /** A fresh browser context (its own storage) with a page; CSP violations and page errors fail the test. */
  newPage(options?: {
    viewport?: { width: number; height: number };
    isMobile?: boolean;
    hasTouch?: boolean;
  }): Promise<Page>;
  /** A new account with a verified email, signed in through the page's sign-in form. */
  signIn(page: Page, options?: { language?: string }): Promise<{ email: string; password: string }>;
  /** The link of the last mail of a kind to an address, pointed at the test app (the mails name `app.public_url`, or the address the app listens on). */
  mailLink(email: string, page: "verify-email" | "reset-password"): Promise<string>;
  /** Where a screenshot goes: docs/images when UPDATE_SCREENSHOTS=1, else a temporary folder removed at close. */
  screenshotPath(name: string): string;
  /** Problems the pages reported (CSP violations, uncaught errors), to assert there are none. */
  problems: string[];
  close(): Promise<void>;
}

const DOCS_IMAGES = new URL("../../docs/images/web-chat/", import.meta.url);

/** Starts the fakes, the app (loopback trusted, so many sign-ins a minute pass) and Chromium. */
export async function startWebStack(options: { config?: Record<string, unknown> } = {}): Promise<WebStack> {
  if (!CHROMIUM) throw new Error("no Chromium");
  const chat = new FakeOpenAiServer();
  const whisper = new FakeWhisperServer();
  const fallbackWhisper = new FakeWhisperServer();
  const piper = new FakePiperServer();
  const moderation = new FakeModerationServer();
  const tei = new FakeTeiServer({ wordEmbeddings: true });
  const [c, w, fw, p, m, e] = await Promise.all([
    chat.start(),
    whisper.start(),
    fallbackWhisper.start(),
    piper.start(),
    moderation.start(),
    tei.start(),
  ]);
  const t = await startTestApp({
    config: {
      ...TRUSTED_LOOPBACK,
      installation: {
        ...TRUSTED_LOOPBACK.installation,
        zones: [{ id: "ch-ti" }],
        fallback_zone: "ch-fallback",
        language: "en",
      },
      tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
      models: [
        { id: CHAT_MODEL, kind: "chat" },
        { id: SECOND_MODEL, kind: "chat" },
        { id: ON_REQUEST_MODEL, kind: "chat", on_request: true },
        { id: "bge-m3", kind: "embedding" },
        { id: "bge-reranker-v2-m3", kind: "rerank" },
        { id: "asr-1", kind: "asr" },
        { id: "asr-1-hd", kind: "asr" },
        { id: "tts-1", kind: "tts" },
      ],
      machines: [
        {
          name: "chat",
          zone: "ch-ti",
          protocol: "openai",
          url: c.url,
          models: [CHAT_MODEL, SECOND_MODEL, ON_REQUEST_MODEL],
        },
        { name: "tei", zone: "ch-ti", protocol: "tei", url: e.url, models: ["bge-m3", "bge-reranker-v2-m3"] },
        { name: "ti-whisper", zone: "ch-ti", protocol: "whisper", url: w.url, models: ["asr-1"] },
        {
          name: "ch-whisper",
          zone: "ch-fallback",
          protocol: "whisper",
          url: fw.url,
          models: ["asr-1", "asr-1-hd"],
        },
        { name: "ch-piper", zone: "ch-fallback", protocol: "piper", url: p.url, models: ["tts-1"] },
        { name: "ch-moderation", zone: "ch-fallback", protocol: "moderation", url: m.url },
      ],
      ...options.config,
    },
  });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--use-fake-device-for-media-stream",
      "--use-fake-ui-for-media-stream",
    ],
  });
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  let shots: string | undefined;
  const stack: WebStack = {
    t,
    chat,
    whisper,
    fallbackWhisper,
    piper,
    tei,
    browser,
    problems,
    async newPage(pageOptions = {}) {
      const context = await browser.newContext({
        baseURL: t.url,
        viewport: pageOptions.viewport ?? { width: 1280, height: 800 },
        ...(pageOptions.isMobile !== undefined ? { isMobile: pageOptions.isMobile } : {}),
        ...(pageOptions.hasTouch !== undefined ? { hasTouch: pageOptions.hasTouch } : {}),
        locale: "en-US",
        permissions: ["microphone"],
      });
      contexts.push(context);
      const page = await context.newPage();
      page.on("console", (message) => {
        const text = message.text();
        if (/Content Security Policy|Refused to/i.test(text)) problems.push(`csp: ${text}`);
      });
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      // Nothing may leave for another host: every request must go to the app.
      page.on("request", (request) => {
        const url = request.url();
        if (!url.startsWith(t.url) && !url.startsWith("data:") && !url.startsWith("blob:")) {
          problems.push(`request to another host: ${url}`);
        }
      });
      return page;
    },
    async signIn(page, signInOptions = {}) {
      const user = await verifiedUser(t, signInOptions.language ? { language: signInOptions.language } : {});
      await page.goto("/sign-in");
      await page.getByLabel(/email|e-mail/i).fill(user.user.email);
      await page.locator('input[name="password"]').fill(PASSWORD);
      await page.locator('form button[type="submit"]').click();
      await page.locator(".composer textarea").waitFor();
      return { email: user.user.email, password: PASSWORD };
    },
    async mailLink(email, kind) {
      const mails = await mailsTo(t, email);
      const mail = mails.find((m) => m.body.includes(`/${kind}?token=`));
      const match = mail ? new RegExp(`https?://[^\\s/]+(/${kind}\\?token=[^\\s]+)`).exec(mail.body) : null;
      if (!match?.[1]) throw new Error(`no ${kind} mail to ${email}`);
      return `${t.url}${match[1]}`;
    },
    screenshotPath(name) {
      if (process.env.UPDATE_SCREENSHOTS === "1") return path.join(DOCS_IMAGES.pathname, `${name}.png`);
      shots ??= mkdtempSync(path.join(tmpdir(), "zona-shots-"));
      return path.join(shots, `${name}.png`);
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => {});
      await browser.close();
      await t.close();
      await Promise.all([
        chat.close(),
        whisper.close(),
        fallbackWhisper.close(),
        piper.close(),
        moderation.close(),
        tei.close(),
      ]);
      if (shots) rmSync(shots, { recursive: true, force: true });
    },
  };
  return stack;
}

/** Asserts the pages reported no CSP violation, no uncaught error and no request elsewhere. */
export function expectNoProblems(stack: WebStack): void {
  expect(stack.problems).toEqual([]);
}
