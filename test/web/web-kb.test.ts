/**
 * The knowledge-base screens of the web chat in headless Chromium: `/kb` lists the
 * user's bases and creates them, `/kb/{slug}` uploads documents with their progress, shows their
 * state live, deletes them, and asks the base with the answer streamed and its sources shown
 * (docs/knowledge-bases.md "App API"; spec "Limits": question 2,000 characters, document upload
 * 50 MB; spec "Events").
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { documentFixture } from "../knowledge/kb-stack.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

const FIXTURES = fileURLToPath(new URL("../fixtures/documents/", import.meta.url));
const fixture = (name: string) => path.join(FIXTURES, name);

// biome-ignore lint/suspicious/noExplicitAny: code run in the page; the tests compile without the DOM library.
type InPage = any;

/** Records every value the upload progress bars take, as the page shows them. */
async function recordProgress(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w: InPage = globalThis;
    const seen: number[] = [];
    w.kbProgress = seen;
    new w.MutationObserver(() => {
      for (const bar of w.document.querySelectorAll(".kb-upload progress"))
        if (seen.at(-1) !== bar.value) seen.push(bar.value);
    }).observe(w.document.body, { subtree: true, childList: true, attributes: true });
  });
}

/** The values recordProgress saw. */
function progressSeen(page: Page): Promise<number[]> {
  return page.evaluate(() => (globalThis as InPage).kbProgress);
}

/** Creates a base through the form of `/kb`; the page is then on the new base. */
async function createBase(page: Page, name: string, description?: string): Promise<string> {
  await page.getByRole("link", { name: "Knowledge bases" }).click();
  await page.getByRole("heading", { name: "Knowledge bases", level: 1 }).waitFor();
  await page.getByLabel("Name", { exact: true }).fill(name);
  if (description !== undefined) await page.getByLabel("Description (optional)").fill(description);
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await page.getByRole("heading", { name, level: 1 }).waitFor();
  expect(new URL(page.url()).pathname).toMatch(/^\/kb\/[a-z0-9-]+$/);
  return decodeURIComponent(new URL(page.url()).pathname.slice(4));
}

/** The row of a document (or of an upload) in the list, by its file name. */
function documentRow(page: Page, filename: string) {
  return page.locator(".kb-doc").filter({ has: page.locator(".kb-doc-name", { hasText: filename }) });
}

/** Drops files on the drop area as a browser does when files are dragged from the desktop. */
async function dropFiles(page: Page, files: Array<{ name: string; bytes: Buffer }>): Promise<void> {
  const dataTransfer = await page.evaluateHandle(
    (list) => {
      const w: InPage = globalThis;
      const transfer = new w.DataTransfer();
      for (const file of list) {
        const bytes = Uint8Array.from(atob(file.base64), (char) => char.charCodeAt(0));
        transfer.items.add(new w.File([bytes], file.name));
      }
      return transfer;
    },
    files.map((file) => ({ name: file.name, base64: file.bytes.toString("base64") })),
  );
  const zone = page.locator(".kb-dropzone");
  await zone.dispatchEvent("dragenter", { dataTransfer });
  await zone.dispatchEvent("dragover", { dataTransfer });
  await zone.dispatchEvent("drop", { dataTransfer });
}

// Each test reads documents (each in a process of its own) and waits for them in the browser: on a
// busy 2-core machine one test took over 30 s, and three documents in a row stayed "processing" for
// over 20 s each. A document gets DOCUMENT_WAIT_MS; on a quiet machine each is read in about a second.
const DOCUMENT_WAIT_MS = 60_000;

describe.skipIf(!CHROMIUM)(
  "Knowledge bases in the web chat (docs/knowledge-bases.md App API; spec Limits: document upload 50 MB, question 2,000 characters)",
  { timeout: 180_000 },
  () => {
    let s: WebStack;
    let scratch: string;
    beforeAll(async () => {
      s = await startWebStack();
      scratch = mkdtempSync(path.join(tmpdir(), "zona-web-kb-"));
    }, 60_000);
    afterAll(async () => {
      await s?.close();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });
    beforeEach(async () => {
      s.problems.length = 0;
      await s.chat.setMode("normal");
    });

    it("Knowledge bases in the web chat (spec Limits: document upload 50 MB, question 2,000 characters): create a base -> upload a PDF through the file picker with its progress shown -> Ready without a reload -> ask -> the answer streamed as Markdown with its sources", async () => {
      const page = await s.newPage();
      await s.signIn(page);
      const slug = await createBase(page, "Nature notes", "Lighthouses and glaciers");
      await page.getByText("No documents yet.").waitFor();
      // Asking waits for a ready document.
      await expect(page.getByRole("button", { name: "Ask", exact: true }).isDisabled()).resolves.toBe(true);
      // No reload may happen from here on: this mark would be lost.
      await page.evaluate(() => {
        (globalThis as InPage).kbMark = 42;
      });

      // Every value the progress bar takes, as the page shows it.
      await recordProgress(page);
      // A slow network (DevTools' emulation: every answer comes 400 ms late), so the upload is long enough to see.
      const cdp = await page.context().newCDPSession(page);
      await cdp.send("Network.enable");
      const network = (latency: number) =>
        cdp.send("Network.emulateNetworkConditions", {
          offline: false,
          latency,
          downloadThroughput: -1,
          uploadThroughput: -1,
        });
      await network(400);
      await page.locator('input[type="file"]').setInputFiles(fixture("two-pages.pdf"));
      const upload = page.locator(".kb-upload").filter({ hasText: "two-pages.pdf" });
      await upload.locator("progress").waitFor();
      await upload.getByText(/Uploading… \d+%|Uploaded, Zona is checking the file…/).waitFor();
      await network(0);

      // The document appears as the API gave it (queued), then turns ready with no reload.
      const row = documentRow(page, "two-pages.pdf");
      await row.waitFor();
      await expect.poll(() => row.getAttribute("data-status"), { timeout: DOCUMENT_WAIT_MS }).toBe("ready");
      await expect(row.locator(".kb-status").innerText()).resolves.toBe("Ready");
      await expect(row.innerText()).resolves.toMatch(/PDF · 6 KB · 2 pages · \d+ passages/);
      await expect.poll(() => page.locator(".kb-upload").count()).toBe(0);
      const seen = await progressSeen(page);
      // The bar went from 0 to the whole file (a file this small goes in one piece: the next test
      // sees the steps between).
      expect(seen[0]).toBe(0);
      expect(seen.at(-1)).toBe(100);

      // Ask: the answer streams in, rendered as Markdown, with the passages it was made from.
      // A question is at most 2,000 characters: the box takes no more, and counts near the end.
      const box = page.getByLabel("Question");
      await box.fill("a".repeat(2100));
      await expect(box.inputValue()).resolves.toHaveLength(2000);
      await page.getByText("2000 / 2000 characters").waitFor();
      const question = "How do glaciers form?";
      await box.fill(question);
      expect(await page.getByText("/ 2000 characters").count()).toBe(0);
      await page.getByRole("button", { name: "Ask", exact: true }).click();
      const exchange = page.locator(".kb-exchange").first();
      await expect.poll(() => exchange.locator(".kb-answer .markdown").innerText()).toBe(`echo: ${question}`);
      await expect.poll(() => exchange.getAttribute("class")).toContain("done");
      await expect(exchange.locator(".kb-question").innerText()).resolves.toBe(question);
      const sources = exchange.locator(".kb-source");
      expect(await sources.count()).toBeGreaterThan(0);
      const first = sources.first();
      await expect(first.locator(".kb-source-index").innerText()).resolves.toBe("[1]");
      await expect(first.locator(".kb-source-document").innerText()).resolves.toBe("two-pages.pdf");
      await expect(first.innerText()).resolves.toContain("page 2");
      await expect(first.locator(".kb-passage").innerText()).resolves.toContain("Glaciers are rivers of ice");
      expect(await exchange.getByRole("heading", { name: "Sources" }).count()).toBe(1);
      await page.screenshot({ path: s.screenshotPath("knowledge-base") });

      expect(await page.evaluate(() => (globalThis as InPage).kbMark)).toBe(42);
      // The list counts the ready document.
      await page.getByRole("link", { name: "All knowledge bases" }).click();
      const card = page.locator(".kb-base-card").filter({ hasText: "Nature notes" });
      await expect.poll(() => card.innerText()).toContain("Documents: 1 · ready: 1");
      await expect(card.innerText()).resolves.toContain("Lighthouses and glaciers");
      await expect(card.getByRole("link", { name: "Nature notes" }).getAttribute("href")).resolves.toBe(
        `/kb/${slug}`,
      );
      expectNoProblems(s);
    });

    it("Knowledge bases in the web chat (docs/knowledge-bases.md: unsupported_document, failed with error): several files at once; an unsupported file is refused with its reason, a scanned PDF goes to Failed with the reason, the readable one to Ready", async () => {
      const page = await s.newPage();
      await s.signIn(page);
      await createBase(page, "Mixed files");
      await page
        .locator('input[type="file"]')
        .setInputFiles([fixture("notes.md"), fixture("page-image.png"), fixture("scanned.pdf")]);

      const picture = documentRow(page, "page-image.png");
      await picture.getByText("Not added").waitFor({ timeout: DOCUMENT_WAIT_MS });
      await expect(picture.innerText()).resolves.toContain(
        "Zona cannot read this file. It takes PDF, Word (DOCX), plain text and Markdown files.",
      );
      const scanned = documentRow(page, "scanned.pdf");
      await expect
        .poll(() => scanned.getAttribute("data-status"), { timeout: DOCUMENT_WAIT_MS })
        .toBe("failed");
      await expect(scanned.locator(".kb-status").innerText()).resolves.toBe("Failed");
      await expect(scanned.locator(".kb-doc-error").innerText()).resolves.toContain("no text layer");
      const notes = documentRow(page, "notes.md");
      await expect.poll(() => notes.getAttribute("data-status"), { timeout: DOCUMENT_WAIT_MS }).toBe("ready");

      // A refused file can be put away; it never was a document of the base.
      await picture.getByRole("button", { name: "Dismiss" }).click();
      await expect.poll(() => picture.count()).toBe(0);
      await page.reload();
      await documentRow(page, "notes.md").waitFor();
      expect(await page.locator(".kb-doc").count()).toBe(2);
      expectNoProblems(s);
    });

    it("Knowledge bases in the web chat (docs/knowledge-bases.md DELETE /rag/kb/{slug}/docs/{id} and /rag/kb/{slug}): files dropped on the page are uploaded; deleting a document and then the base asks first", async () => {
      const page = await s.newPage();
      await s.signIn(page);
      await createBase(page, "Drop zone");
      await dropFiles(page, [
        { name: "notes.txt", bytes: documentFixture("notes.txt") },
        { name: "headings.docx", bytes: documentFixture("headings.docx") },
      ]);
      for (const name of ["notes.txt", "headings.docx"]) {
        await expect
          .poll(() => documentRow(page, name).getAttribute("data-status"), { timeout: DOCUMENT_WAIT_MS })
          .toBe("ready");
      }

      // Deleting asks first; cancelling keeps the document.
      await page.getByRole("button", { name: "Delete notes.txt" }).click();
      const dialog = page.getByRole("dialog");
      await dialog.getByText("“notes.txt” will be removed").waitFor();
      await dialog.getByRole("button", { name: "Cancel" }).click();
      expect(await documentRow(page, "notes.txt").count()).toBe(1);
      await page.getByRole("button", { name: "Delete notes.txt" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
      await expect.poll(() => documentRow(page, "notes.txt").count()).toBe(0);
      await page.reload();
      await documentRow(page, "headings.docx").waitFor();
      expect(await documentRow(page, "notes.txt").count()).toBe(0);

      // The answer names the remaining document, with the section of its passage.
      await page.getByLabel("Question").fill("Where do leafcutter ants grow their fungus?");
      await page.keyboard.press("Enter");
      const first = page.locator(".kb-exchange").first().locator(".kb-source").first();
      await first.waitFor();
      await expect(first.locator(".kb-source-document").innerText()).resolves.toBe("headings.docx");
      await expect(first.innerText()).resolves.toContain("Leafcutter ants");

      await page.getByRole("button", { name: "Delete knowledge base" }).click();
      await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
      await expect.poll(() => new URL(page.url()).pathname).toBe("/kb");
      await page.getByText("You have no knowledge base yet.").waitFor();
      expectNoProblems(s);
    });

    it("Knowledge bases in the web chat (spec Limits: document upload 50 MB): a file over 50 MB is refused in the page without being sent; a 45 MB file shows its upload progress step by step, then Zona's refusal of what is no document", async () => {
      const tooLarge = path.join(scratch, "too-large.pdf");
      writeFileSync(tooLarge, "%PDF-1.4\n");
      truncateSync(tooLarge, 50 * 1024 * 1024 + 1);
      // A picture (its content says so: the PNG signature), large enough for its upload to take a while.
      const large = path.join(scratch, "holiday.png");
      writeFileSync(
        large,
        Buffer.concat([Buffer.from("\x89PNG\r\n\x1a\n", "latin1"), randomBytes(45 * 1024 * 1024)]),
      );

      const page = await s.newPage();
      await s.signIn(page);
      await createBase(page, "Large files");
      const uploads: string[] = [];
      page.on("request", (request) => {
        if (request.method() === "POST" && request.url().endsWith("/docs")) uploads.push(request.url());
      });

      await page.locator('input[type="file"]').setInputFiles(tooLarge);
      const refused = documentRow(page, "too-large.pdf");
      await refused.getByText("Not added").waitFor();
      await expect(refused.locator(".kb-doc-error").innerText()).resolves.toBe(
        "The file is larger than 50 MB, the most a knowledge base takes per file.",
      );
      expect(uploads).toEqual([]);

      await recordProgress(page);
      await page.locator('input[type="file"]').setInputFiles(large);
      const row = documentRow(page, "holiday.png");
      await row.getByText("Not added").waitFor({ timeout: DOCUMENT_WAIT_MS });
      await expect(row.locator(".kb-doc-error").innerText()).resolves.toBe(
        "Zona cannot read this file. It takes PDF, Word (DOCX), plain text and Markdown files.",
      );
      // Zona's own reason follows, as the app API words it.
      await expect(row.innerText()).resolves.toContain(
        "This file is a PNG image, not a document Zona can read.",
      );
      expect(uploads).toHaveLength(1);
      const seen = await progressSeen(page);
      expect(seen[0]).toBe(0);
      expect(seen.at(-1)).toBe(100);
      expect(seen.some((value) => value > 0 && value < 100)).toBe(true);
      expect(await page.locator(".kb-doc[data-status]").count()).toBe(0);
      expectNoProblems(s);
    });

    it("Knowledge bases in the web chat (spec Events: error then done with outcome error): on a phone in Italian, one column, and a model that stops mid-answer is told in Italian", async () => {
      const page = await s.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
      await s.signIn(page, { language: "it" });
      await page.getByRole("button", { name: "Menu" }).click();
      await page.getByRole("link", { name: "Basi di conoscenza" }).click();
      await page.getByLabel("Nome", { exact: true }).fill("Telefono");
      await page.getByRole("button", { name: "Crea", exact: true }).click();
      await page.getByRole("heading", { name: "Telefono", level: 1 }).waitFor();
      await page.locator('input[type="file"]').setInputFiles(fixture("two-pages.pdf"));
      await expect
        .poll(() => documentRow(page, "two-pages.pdf").getAttribute("data-status"), {
          timeout: DOCUMENT_WAIT_MS,
        })
        .toBe("ready");
      await expect(documentRow(page, "two-pages.pdf").locator(".kb-status").innerText()).resolves.toBe(
        "Pronto",
      );

      // One column, nothing wider than the screen.
      const [documents, ask] = await page.locator(".kb-column").all();
      const a = await documents?.boundingBox();
      const b = await ask?.boundingBox();
      expect(b && a && b.y >= a.y + a.height).toBe(true);
      expect(
        await page.evaluate(() => (globalThis as InPage).document.documentElement.scrollWidth),
      ).toBeLessThanOrEqual(390);

      await s.chat.setMode("dropMidStream", { dropAfterChunks: 1 });
      await page.getByLabel("Domanda").fill("Come si formano i ghiacciai?");
      await page.getByRole("button", { name: "Chiedi", exact: true }).click();
      const exchange = page.locator(".kb-exchange").first();
      await exchange.getByRole("alert").waitFor();
      await expect(exchange.getByRole("alert").innerText()).resolves.toBe(
        "Il modello ha smesso di rispondere prima di finire la risposta. Riprova.",
      );
      // The sources came before the model stopped.
      await expect(exchange.getByRole("heading", { name: "Fonti" }).count()).resolves.toBe(1);
      await expect(exchange.locator(".kb-source").first().innerText()).resolves.toContain("pagina");
      expectNoProblems(s);
    });
  },
);
