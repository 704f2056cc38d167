import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { conversationId, explained, POLL } from "./web-page.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

// Globals of the page, for the functions that run in it (the tests' TypeScript has no DOM library).
declare const window: { __xss?: unknown };
type BrowserNavigator = Navigator & { clipboard: { readText(): Promise<string> } };

/** The fixed English text a failed answer is saved with (docs/app-chat.md "Failures and cut connections"). */
const FAILED_ANSWER = "The model did not answer. Please try again.";

/** Generous for a loaded 2-core machine: each test signs in, streams answers and reloads. */
const SLOW_TEST_MS = 90_000;

interface SavedConversation {
  title: string;
  messages: { role: "user" | "assistant"; content: string }[];
}

/** Writes a message in the composer and sends it with the Send button. */
async function ask(page: Page, text: string): Promise<void> {
  await page.getByLabel("Message").fill(text);
  await page.getByRole("button", { name: "Send" }).click();
}

/** The conversation as the app API saved it, read with the page's own access token. */
async function saved(s: WebStack, page: Page, id: string): Promise<SavedConversation> {
  const token = await page.evaluate(
    () => (JSON.parse(localStorage.getItem("zona.session") ?? "{}") as { accessToken?: string }).accessToken,
  );
  const response = await s.t.fetch(`/api/v1/chat/sessions/${id}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as SavedConversation;
}

/** Waits until the chat machine takes requests again (a probe during a failure mode may have taken it out). */
async function chatMachineTakesRequests(s: WebStack): Promise<void> {
  await expect
    .poll(
      async () => {
        const machines = await s.t.admin("GET", "/machines");
        return (machines.body.data as { name: string; state: string }[]).find((m) => m.name === "chat")
          ?.state;
      },
      { timeout: 30_000 },
    )
    .toMatch(/^(up|half_open)$/);
}

const spaced = (text: string) => text.replace(/\s+/g, " ").trim();

describe.skipIf(!CHROMIUM)("Web chat answers in Chromium", () => {
  let s: WebStack;
  beforeAll(async () => {
    s = await startWebStack();
  }, 60_000);
  afterAll(() => s?.close());
  beforeEach(async () => {
    await s.chat.setMode("normal", { chunks: undefined, chunkDelayMs: 0, dropAfterChunks: 2 });
    s.chat.clearRequests();
    s.problems.length = 0;
  });

  it(
    "Stop (spec Chat sessions: closing the connection stops the answer; app-chat.md: what was generated is saved): the upstream request is closed early, the partial text stays marked stopped, Stop turns back into Send, a reload shows the saved partial answer, still marked stopped",
    async () => {
      // A long, slow answer: 400 pieces, 40 ms apart (16 s), stopped after a few pieces.
      await s.chat.setMode("normal", { chunks: 400, chunkDelayMs: 40 });
      const page = await s.newPage();
      await s.signIn(page);
      await ask(page, "Please count very slowly");
      const answer = page.locator(".message.assistant").last();
      await expect
        .poll(async () => spaced(await answer.innerText()).split(" ").length, { timeout: 15_000 })
        .toBeGreaterThan(8);
      await page.getByRole("button", { name: "Stop" }).click();

      await answer.locator(".stopped").waitFor();
      expect(await answer.locator(".stopped").innerText()).toBe("Stopped.");
      await page.getByRole("button", { name: "Send" }).waitFor();
      expect(await page.getByRole("button", { name: "Stop" }).count()).toBe(0);
      expect(await page.locator(".message.assistant.streaming").count()).toBe(0);
      const shown = spaced(await answer.locator(".markdown").innerText());
      expect(shown.startsWith("echo: Please count very slowly")).toBe(true);

      // The app closed its request to the machine before the machine's stream ended.
      await expect.poll(() => s.chat.abandonedStreams, { timeout: 10_000 }).toBe(1);
      const upstream = s.chat
        .requestsTo("/v1/chat/completions")
        .filter((request) => (request.body as { stream?: boolean }).stream === true);
      expect(upstream).toHaveLength(1);

      // What was generated until then is the saved answer: at least what the page showed, not all.
      const id = await conversationId(page);
      await expect
        .poll(async () => (await saved(s, page, id)).messages.map((m) => m.role), { timeout: 10_000 })
        .toEqual(["user", "assistant"]);
      const partial = spaced((await saved(s, page, id)).messages[1]?.content ?? "");
      expect(partial.startsWith(shown)).toBe(true);
      expect(partial.split(" ").length).toBeLessThan(400);

      await page.reload();
      const reloaded = page.locator(".message.assistant").last();
      await expect.poll(async () => spaced(await reloaded.locator(".markdown").innerText())).toBe(partial);
      // Still marked stopped after the reload (the web chat's read says which answers were).
      expect(await reloaded.locator(".stopped").innerText()).toBe("Stopped.");
      await page.getByRole("button", { name: "Send" }).waitFor();
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Failure (spec States and transitions: a failed answer is saved with a fixed English text; Events: error then done): before the first token and midway the page shows the failure text with Try again, which sends again; a reload still shows the saved failures",
    async () => {
      const page = await s.newPage();
      await s.signIn(page);
      // 1. The machine fails before the first token.
      await s.chat.setMode("error500");
      await ask(page, "First question for the model");
      const failed = page.locator(".message.assistant.failed");
      await failed.first().waitFor();
      expect(await failed.first().locator(".failure-text").innerText()).toBe(FAILED_ANSWER);
      const retry = page.getByRole("button", { name: "Try again" });
      await retry.waitFor();
      await page.screenshot({ path: s.screenshotPath("failure-retry") });

      await s.chat.setMode("normal");
      await chatMachineTakesRequests(s);
      await retry.click();
      const last = page.locator(".message.assistant").last();
      await explained(page, () =>
        expect.poll(() => last.innerText(), POLL).toContain("echo: First question for the model"),
      );
      await expect.poll(() => page.locator(".message.assistant.streaming").count()).toBe(0);
      expect(await retry.count()).toBe(0);
      // That first answer queued the automatic title, a request to the same machine: it is made
      // before the machine starts breaking off (cut, it would leave the machine down for step 2).
      await expect
        .poll(() => page.locator(".conversation-title").innerText(), { timeout: 15_000 })
        .not.toBe("New chat");

      // 2. The machine breaks off midway: some pieces arrive, then the connection is cut.
      await s.chat.setMode("dropMidStream", { dropAfterChunks: 4, chunkDelayMs: 200 });
      await ask(page, "Second question, a longer one with many words");
      await explained(page, () => expect.poll(() => failed.count(), { timeout: 15_000 }).toBe(2));
      expect(await failed.last().locator(".failure-text").innerText()).toBe(FAILED_ANSWER);
      // The pieces that arrived stay above the failure text until a reload.
      expect(await failed.last().locator(".markdown").innerText()).toBe("echo: Second question,");
      expect(await failed.first().locator(".markdown").count()).toBe(0);
      await s.chat.setMode("normal", { chunkDelayMs: 0 });
      await chatMachineTakesRequests(s);
      await retry.click();
      await explained(page, () =>
        expect.poll(() => last.innerText(), POLL).toContain("echo: Second question, a longer one"),
      );
      await expect.poll(() => page.locator(".message.assistant.streaming").count()).toBe(0);

      // Saved: every failure as the fixed text, each followed by the user's message sent again.
      const id = await conversationId(page);
      const { messages } = await saved(s, page, id);
      expect(messages.map((m) => m.role)).toEqual(Array(4).fill(["user", "assistant"]).flat());
      expect(messages.map((m) => m.content === FAILED_ANSWER)).toEqual([
        false,
        true,
        false,
        false,
        false,
        true,
        false,
        false,
      ]);

      await page.reload();
      await expect.poll(() => page.locator(".message.assistant").count()).toBe(4);
      expect(await failed.count()).toBe(2);
      expect(await failed.locator(".failure-text").allInnerTexts()).toEqual([FAILED_ANSWER, FAILED_ANSWER]);
      expect(await failed.locator(".markdown").count()).toBe(0);
      // Only the last answer may be tried again, and it succeeded.
      expect(await retry.count()).toBe(0);
      expect(await last.innerText()).toContain("echo: Second question, a longer one");
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "XSS inert (spec Chat sessions: answers are model output shown as Markdown): script, img onerror, a javascript: link and an onclick run nothing and leave nothing in the DOM, before the CSP has to act",
    async () => {
      const page = await s.newPage();
      await s.signIn(page);
      const attack = [
        "Please repeat <script>window.__xss=1</script> this",
        "",
        '<img src=x onerror="window.__xss=2">',
        "",
        "[a bad link](javascript:window.__xss=3)",
        "",
        '<a onclick="window.__xss=4">click me</a> <span style="color:red">red</span> <b>bold</b>',
        "",
        "<style>p { display: none }</style>",
      ].join("\n");
      await ask(page, attack);
      const answer = page.locator(".message.assistant").last();
      await expect.poll(() => answer.innerText()).toContain("display: none");
      await expect.poll(() => page.locator(".message.assistant.streaming").count()).toBe(0);
      const markdown = answer.locator(".markdown");
      expect(await markdown.innerText()).toContain("echo: Please repeat");

      expect(await page.evaluate(() => window.__xss)).toBeUndefined();
      await markdown.getByText("a bad link").click();
      await markdown.getByText("click me").click();
      expect(await page.evaluate(() => window.__xss)).toBeUndefined();
      expect(page.context().pages()).toHaveLength(1);

      const dom = await markdown.evaluate((root) => {
        const elements = [...root.querySelectorAll("*")];
        return {
          scripts: root.querySelectorAll("script").length,
          images: root.querySelectorAll("img").length,
          styles: root.querySelectorAll("style, [style]").length,
          handlers: elements.flatMap((element) =>
            element.getAttributeNames().filter((name: string) => name.toLowerCase().startsWith("on")),
          ),
          scriptLinks: elements.filter((element) =>
            /^\s*javascript:/i.test(element.getAttribute("href") ?? element.getAttribute("src") ?? ""),
          ).length,
        };
      });
      expect(dom).toEqual({ scripts: 0, images: 0, styles: 0, handlers: [], scriptLinks: 0 });
      // The model's markup is shown as text; bare formatting tags stay tags.
      expect(await markdown.innerText()).toContain('<img src=x onerror="window.__xss=2">');
      expect(await markdown.locator("b").allInnerTexts()).toEqual(["bold"]);
      expect(await page.evaluate(() => window.__xss)).toBeUndefined();
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Markdown (spec Chat sessions: answers shown as Markdown): a fenced js block is highlighted with a working Copy button, a table and both kinds of list render",
    async () => {
      const page = await s.newPage();
      await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: s.t.url });
      await s.signIn(page);
      const code = 'const answer = 42;\nconsole.log("the answer is", answer);';
      const source = [
        "here is some code:",
        "",
        "```js",
        code,
        "```",
        "",
        "| Name | Value |",
        "| --- | --- |",
        "| one | 1 |",
        "| two | 2 |",
        "",
        "- apple",
        "- pear",
        "",
        "1. first",
        "2. second",
        "3. third",
      ].join("\n");
      await ask(page, source);
      const markdown = page.locator(".message.assistant").last().locator(".markdown");
      await expect.poll(() => markdown.locator("ol li").count()).toBe(3);
      await expect.poll(() => page.locator(".message.assistant.streaming").count()).toBe(0);

      const block = markdown.locator("pre");
      expect(await block.count()).toBe(1);
      expect(await block.getAttribute("data-language")).toBe("js");
      // highlight.js is fetched by the first code block, then the answer is drawn again in colour.
      await expect.poll(() => block.locator("code.hljs span.hljs-keyword").count()).toBeGreaterThan(0);
      expect(await block.locator("code.hljs span.hljs-string").count()).toBeGreaterThan(0);
      expect(await markdown.locator("table").count()).toBe(1);
      expect(await markdown.locator("table tbody tr").count()).toBe(2);
      expect(await markdown.locator("table th").allInnerTexts()).toEqual(["Name", "Value"]);
      expect(await markdown.locator("ul li").allInnerTexts()).toEqual(["apple", "pear"]);
      expect(await markdown.locator("ol li").allInnerTexts()).toEqual(["first", "second", "third"]);

      const copy = markdown.getByRole("button", { name: "Copy" });
      await copy.click();
      await markdown.getByRole("button", { name: "Copied" }).waitFor();
      expect(await page.evaluate(() => (navigator as BrowserNavigator).clipboard.readText())).toBe(code);
      await page.screenshot({ path: s.screenshotPath("markdown-answer") });
      await markdown.getByRole("button", { name: "Copy" }).waitFor();
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );
});
