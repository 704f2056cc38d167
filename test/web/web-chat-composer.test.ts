import { eq } from "drizzle-orm";
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { conversationMessages } from "../../src/store/schema.ts";
import { answered, conversationId } from "./web-page.ts";
import {
  CHAT_MODEL,
  CHROMIUM,
  expectNoProblems,
  ON_REQUEST_MODEL,
  SECOND_MODEL,
  startWebStack,
  type WebStack,
} from "./web-stack.ts";

// Globals of the page, for the functions that run in it (the tests' TypeScript has no DOM library).
declare const window: { __samePage?: boolean };
declare const document: { activeElement: unknown };
declare function getComputedStyle(element: unknown): { outlineStyle: string; outlineWidth: string };

/** Generous for a loaded 2-core machine: each test signs in and streams answers. */
const SLOW_TEST_MS = 90_000;

/** Presses `key` (at most 4 times) until `target` has the focus; whether it got there. */
async function pressUntilFocused(page: Page, key: string, target: Locator): Promise<boolean> {
  for (let i = 0; i < 4; i++) {
    await page.keyboard.press(key);
    if (await target.evaluate((element) => element === document.activeElement)) return true;
  }
  return false;
}

/** Holds the page's `GET /web/models` until the returned function is called. */
async function holdModelList(page: Page): Promise<() => void> {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route("**/api/v1/web/models", async (route) => {
    await released;
    await route.continue();
  });
  return () => release();
}

describe.skipIf(!CHROMIUM)("Web chat composer in Chromium", () => {
  let s: WebStack;
  beforeAll(async () => {
    s = await startWebStack();
  }, 60_000);
  afterAll(() => s?.close());
  beforeEach(async () => {
    await s.chat.setMode("normal", { chunks: undefined, chunkDelayMs: 0 });
    s.chat.clearRequests();
    s.problems.length = 0;
  });

  it(
    "Model list and tier (spec Chat sessions: each message names its model and its tier): the picker lists the catalogue's chat models with the on-request one disabled; SECOND_MODEL at tier fast reaches the machine and is saved with the message",
    async () => {
      const page = await s.newPage();
      await s.signIn(page);
      const modelPicker = page.locator('select[name="model"]');
      await expect.poll(() => modelPicker.locator("option").count()).toBe(3);
      const options = await modelPicker.locator("option").evaluateAll((elements) =>
        (elements as unknown as { value: string; text: string; disabled: boolean }[]).map((o) => ({
          value: o.value,
          text: o.text,
          disabled: o.disabled,
        })),
      );
      expect(options).toEqual([
        { value: CHAT_MODEL, text: CHAT_MODEL, disabled: false },
        { value: SECOND_MODEL, text: SECOND_MODEL, disabled: false },
        { value: ON_REQUEST_MODEL, text: `${ON_REQUEST_MODEL} (not available)`, disabled: true },
      ]);
      // The catalogue's default label is no model of this installation: the first usable one is picked.
      expect(await modelPicker.inputValue()).toBe(CHAT_MODEL);
      const tierPicker = page.locator('select[name="tier"]');
      expect(await tierPicker.locator("option").allInnerTexts()).toEqual([
        "Slow",
        "Medium",
        "Fast",
        "Ludicrous",
      ]);
      expect(await tierPicker.inputValue()).toBe("slow");

      await modelPicker.selectOption(SECOND_MODEL);
      await tierPicker.selectOption("fast");
      await page.getByLabel("Message").fill("Which model answers this?");
      const sent = page.waitForRequest(
        (request) => request.method() === "POST" && /\/chat\/sessions\/[^/]+\/messages$/.test(request.url()),
      );
      await page.getByRole("button", { name: "Send" }).click();
      expect((await sent).postDataJSON()).toEqual({
        content: "Which model answers this?",
        model: SECOND_MODEL,
        tier: "fast",
      });
      await answered(page);
      expect(await page.locator(".message.assistant").last().innerText()).toContain(
        "echo: Which model answers this?",
      );

      // The machine was asked with that model, and the app saved both messages at tier fast.
      const streamed = s.chat
        .requestsTo("/v1/chat/completions")
        .map((request) => request.body as { model: string; stream?: boolean })
        .filter((body) => body.stream === true);
      expect(streamed.map((body) => body.model)).toEqual([SECOND_MODEL]);
      const id = await conversationId(page);
      const rows = await s.t.store.db
        .select({
          role: conversationMessages.role,
          model: conversationMessages.model,
          tier: conversationMessages.tier,
        })
        .from(conversationMessages)
        .where(eq(conversationMessages.conversationId, id))
        .orderBy(conversationMessages.seq);
      expect(rows).toEqual([
        { role: "user", model: SECOND_MODEL, tier: "fast" },
        { role: "assistant", model: SECOND_MODEL, tier: "fast" },
      ]);

      // The picks are remembered for the next conversation.
      await page.locator(".sidebar .new-chat").click();
      await expect.poll(() => page.locator(".message").count()).toBe(0);
      expect(await modelPicker.inputValue()).toBe(SECOND_MODEL);
      expect(await tierPicker.inputValue()).toBe("fast");
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Keyboard (spec Chat sessions: send a message): Enter pressed while the model list is still on its way sends the message once the list arrives",
    async () => {
      const page = await s.newPage();
      const release = await holdModelList(page);
      await s.signIn(page);
      const box = page.getByLabel("Message");
      await box.fill("sent before the models came");
      await box.press("Enter");
      expect(await page.locator(".message").count()).toBe(0);
      expect(await box.inputValue()).toBe("sent before the models came");

      release();
      await page.locator(".message.user .bubble").waitFor();
      expect(await box.inputValue()).toBe("");
      await answered(page);
      expect(await page.locator(".message.assistant").last().innerText()).toContain(
        "echo: sent before the models came",
      );
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Keyboard (spec Chat sessions: send a message): Enter pressed just after the model list arrived, before the pickers show their choice, sends with the preselected model",
    async () => {
      const page = await s.newPage();
      // Time flows for the sign-in, then stands still: the page still renders (a render waits for no
      // timer) but runs no effect (they wait for the next frame), so the pickers stay unset.
      await page.clock.install();
      const release = await holdModelList(page);
      await s.signIn(page);
      const box = page.getByLabel("Message");
      await box.fill("sent in the moment the models came");
      await page.clock.pauseAt(Date.now() + 60_000);
      release();
      await expect.poll(() => page.locator(".composer select[name=model] option").count()).toBeGreaterThan(0);
      await box.press("Enter");
      await page.clock.resume();
      await page.locator(".message.user .bubble").waitFor();
      await answered(page);
      expect(await page.locator(".message.assistant").last().innerText()).toContain(
        "echo: sent in the moment the models came",
      );
      expect(await page.locator(".composer select[name=model]").inputValue()).toBe(CHAT_MODEL);
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Keyboard (spec Chat sessions: send a message): Enter sends, Shift+Enter starts a new line, Tab reaches the send button with a visible focus",
    async () => {
      const page = await s.newPage();
      await s.signIn(page);
      const box = page.getByLabel("Message");
      // The message box has the focus when the chat opens.
      await expect.poll(() => box.evaluate((element) => element === document.activeElement)).toBe(true);
      await page.keyboard.type("first line");
      await page.keyboard.press("Shift+Enter");
      await page.keyboard.type("second line");
      expect(await box.inputValue()).toBe("first line\nsecond line");
      expect(await page.locator(".message").count()).toBe(0);

      // Tab (past the buttons beside the box, such as dictation) reaches the send button.
      const send = page.getByRole("button", { name: "Send" });
      expect(await pressUntilFocused(page, "Tab", send)).toBe(true);
      const focus = await send.evaluate((button) => {
        const style = getComputedStyle(button);
        return {
          focused: button === document.activeElement,
          visible: button.matches(":focus-visible"),
          outline: style.outlineStyle,
          width: Number.parseFloat(style.outlineWidth),
        };
      });
      expect(focus.focused).toBe(true);
      expect(focus.visible).toBe(true);
      expect(focus.outline).not.toBe("none");
      expect(focus.width).toBeGreaterThan(0);

      expect(await pressUntilFocused(page, "Shift+Tab", box)).toBe(true);
      await page.keyboard.press("Enter");
      const bubble = page.locator(".message.user .bubble");
      await bubble.waitFor();
      expect(await bubble.innerText()).toBe("first line\nsecond line");
      expect(await box.inputValue()).toBe("");
      await answered(page);
      expect(await page.locator(".message.assistant").last().innerText()).toContain("echo: first line");
      const sent = s.chat
        .requestsTo("/v1/chat/completions")
        .map((request) => request.body as { messages: unknown[] });
      expect(JSON.stringify(sent[0]?.messages.at(-1))).toContain("first line\\nsecond line");
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Default title (spec Chat sessions: without a title the web chat's default title in the installation's language until the automatic title replaces it): a new conversation shows New chat (installation en, account de), then the automatic title without a reload",
    async () => {
      // A slow answer: the default title stays while it arrives, the automatic one follows its end.
      await s.chat.setMode("normal", { chunks: 30, chunkDelayMs: 100 });
      const page = await s.newPage();
      await s.signIn(page, { language: "de" });
      // The interface speaks the account's language ...
      await page.getByRole("link", { name: "Neuer Chat" }).waitFor();
      await page.evaluate(() => {
        window.__samePage = true;
      });
      await page.getByLabel("Nachricht").fill("Tell me about the mountains of Ticino");
      await page.getByRole("button", { name: "Senden" }).click();

      // ... the default title the installation's.
      const title = page.locator(".conversation-title");
      await expect.poll(() => title.innerText()).toBe("New chat");
      await expect.poll(() => page.locator(".conversation-link.current").innerText()).toBe("New chat");
      expect(await page.locator(".message.assistant.streaming").count()).toBe(1);
      await answered(page);

      await expect.poll(() => title.innerText(), { timeout: 20_000 }).not.toBe("New chat");
      const automatic = await title.innerText();
      expect(automatic.length).toBeGreaterThan(0);
      await expect.poll(() => page.locator(".conversation-link.current").innerText()).toBe(automatic);
      await expect.poll(() => page.title()).toContain(automatic);
      expect(await page.evaluate(() => window.__samePage)).toBe(true);
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Copy an answer and find a conversation (spec Chat sessions: GET /chat/sessions lists up to 200 conversations, most recent first): the answer's Copy button puts its Markdown on the clipboard; the sidebar's search keeps the conversations whose title matches",
    async () => {
      const page = await s.newPage();
      await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
      await s.signIn(page);
      const titles = [
        "Alpine lakes",
        "Budget 2027",
        "Cheese fondue",
        "Dolomites trip",
        "Engine notes",
        "Fjord cruise",
      ];
      await page.evaluate(async (names) => {
        const session = JSON.parse(localStorage.getItem("zona.session") ?? "{}") as { accessToken: string };
        for (const title of names) {
          await fetch("/api/v1/chat/sessions", {
            method: "POST",
            headers: { authorization: `Bearer ${session.accessToken}`, "content-type": "application/json" },
            body: JSON.stringify({ title }),
          });
        }
      }, titles);
      await page.reload();
      const search = page.getByRole("searchbox", { name: "Search conversations" });
      await search.fill("fondue");
      await expect
        .poll(() => page.locator(".conversation-list li").allInnerTexts())
        .toEqual(["Cheese fondue"]);
      await search.fill("");
      await expect.poll(() => page.locator(".conversation-list li").count()).toBe(6);

      await page.locator(".conversation-list a", { hasText: "Dolomites trip" }).click();
      await page.getByLabel("Message").fill("**bold** words");
      await page.keyboard.press("Enter");
      await answered(page);
      const actions = page.locator(".message.assistant").last().locator(".message-actions");
      await actions.getByRole("button", { name: "Copy" }).click();
      await actions.getByRole("button", { name: "Copied" }).waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe("echo: **bold** words");
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );
});
