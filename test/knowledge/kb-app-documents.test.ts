/**
 * Documents of the app API's knowledge bases over real HTTP (docs/knowledge-bases.md "How a
 * document becomes passages" and "App API"): upload (202 queued), reading in the background to
 * ready or failed, the format judged by content, refusals at upload, the 50 MB limit, replacing a
 * document of the same name, deleting one, and the per-user limit of uploads.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kbPassages } from "../../src/store/schema.ts";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { readEvents } from "../app/chat-stack.ts";
import { documentFixture, type KbStack, startKbStack } from "./kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are checked by assertions, not by types.
type Json = any;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const MB = 1024 * 1024;

let s: KbStack;
beforeAll(async () => {
  s = await startKbStack();
});
afterAll(() => s.close());

async function json(response: Response): Promise<{ status: number; body: Json }> {
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** A new user with a new base (each user's counter allows 10 uploads a minute). */
async function freshBase(name = "Documents") {
  const user = await s.user();
  return { user, slug: await s.createBase(user, name) };
}

async function documentsOf(user: AppUserHandle, slug: string): Promise<Json[]> {
  const answer = await json(await user.fetch(`/rag/kb/${slug}/docs`));
  expect(answer.status).toBe(200);
  return answer.body.data;
}

/** Polls the document list until the document is in one of `states`. */
async function waitFor(user: AppUserHandle, slug: string, id: string, states = ["ready", "failed"]) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const document = (await documentsOf(user, slug)).find((item) => item.id === id);
    if (document && states.includes(document.status)) return document;
    if (Date.now() > deadline) throw new Error(`document ${id} still ${document?.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function uploadAndWait(user: AppUserHandle, slug: string, bytes: Buffer, filename: string) {
  const uploaded = await json(await s.upload(user, slug, bytes, filename));
  expect(uploaded.status).toBe(202);
  return { queued: uploaded.body, settled: await waitFor(user, slug, uploaded.body.id) };
}

async function passagesOf(documentId: string): Promise<string[]> {
  const rows = await s.t.store.db.select().from(kbPassages).where(eq(kbPassages.documentId, documentId));
  return rows.map((row) => row.text);
}

async function sourcesFor(user: AppUserHandle, slug: string, question: string): Promise<Json[]> {
  const response = await user.post(`/rag/kb/${slug}/chat`, { question });
  expect(response.status).toBe(200);
  return (await readEvents(response))[0]?.sources;
}

describe("Documents: each kind is read to passages (POST /rag/kb/{slug}/docs -> 202 queued -> ready)", () => {
  let base: { user: AppUserHandle; slug: string };
  beforeAll(async () => {
    base = await freshBase();
  });

  it.each([
    ["two-pages.pdf", "pdf", 2],
    ["headings.docx", "docx", null],
    ["notes.md", "markdown", null],
    ["notes.txt", "txt", null],
  ])("%s: format %s, ready with passages, pages %s", async (file, format, pages) => {
    const bytes = documentFixture(file);
    const { queued, settled } = await uploadAndWait(base.user, base.slug, bytes, file);
    expect(queued).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      filename: file,
      format,
      size_bytes: bytes.length,
      status: "queued",
      error: null,
      passages: 0,
      pages: null,
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(settled).toMatchObject({ id: queued.id, format, status: "ready", error: null, pages });
    expect(settled.passages).toBeGreaterThan(0);
    expect(await passagesOf(queued.id)).toHaveLength(settled.passages);
  });
});

describe("Documents: the format is judged by the content, not the name", () => {
  let base: { user: AppUserHandle; slug: string };
  beforeAll(async () => {
    base = await freshBase();
  });

  it.each([
    ["two-pages.pdf", "notes.txt", "pdf", 2],
    ["headings.docx", "headings.pdf", "docx", null],
    ["notes.md", "sea.txt", "markdown", null],
    ["notes.txt", "kitchen.md", "markdown", null],
    ["notes.txt", "kitchen.docx", "txt", null],
  ])("%s uploaded as %s is %s", async (file, name, format, pages) => {
    const { queued, settled } = await uploadAndWait(base.user, base.slug, documentFixture(file), name);
    expect(queued).toMatchObject({ filename: name, format });
    expect(settled).toMatchObject({ status: "ready", format, pages });
  });
});

// An old Word file: the OLE compound-file signature, then padding.
const OLE_DOC = Buffer.concat([Buffer.from("d0cf11e0a1b11ae1", "hex"), Buffer.alloc(2048, 1)]);

describe("Documents: refused at upload with 400 unsupported_document and the reason; nothing is stored", () => {
  let base: { user: AppUserHandle; slug: string };
  beforeAll(async () => {
    base = await freshBase();
  });

  it.each([
    ["a PNG picture named report.pdf", documentFixture("page-image.png"), "report.pdf", /PNG image/],
    [
      "a ZIP that is not a DOCX, named notes.docx",
      documentFixture("not-a-docx.zip"),
      "notes.docx",
      /ZIP archive/,
    ],
    ["an old binary Word file", OLE_DOC, "old.doc", /\S/],
    ["an empty file", Buffer.alloc(0), "empty.txt", /^The file is empty\.$/],
  ])("%s", async (_label, bytes, name, reason) => {
    const answer = await json(await s.upload(base.user, base.slug, bytes, name));
    expect(answer).toEqual({
      status: 400,
      body: { error: { code: "unsupported_document", message: expect.stringMatching(reason) } },
    });
    expect(await documentsOf(base.user, base.slug)).toEqual([]);
  });
});

describe("Documents: failed after reading, with the reason in `error`", () => {
  let base: { user: AppUserHandle; slug: string };
  beforeAll(async () => {
    base = await freshBase();
  });

  it.each([
    ["scanned.pdf", /no text layer/],
    ["truncated.pdf", /damaged/],
    ["encrypted.pdf", /password/],
  ])("%s: 202 queued, then failed: %s", async (file, reason) => {
    const { queued, settled } = await uploadAndWait(base.user, base.slug, documentFixture(file), file);
    expect(queued).toMatchObject({ status: "queued", format: "pdf" });
    expect(settled).toMatchObject({ status: "failed", passages: 0, error: expect.stringMatching(reason) });
    expect(await passagesOf(queued.id)).toEqual([]);
    // A failed document leaves the base not ready.
    const base_ = await json(await base.user.fetch(`/rag/kb/${base.slug}`));
    expect(base_.body.ready_documents).toBe(0);
  });
});

describe("Documents: 422 validation_error without a file", () => {
  let base: { user: AppUserHandle; slug: string };
  beforeAll(async () => {
    base = await freshBase();
  });

  const boundary = "kbtestboundary";
  const multipart = (parts: string) => ({
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    body: `${parts}--${boundary}--\r\n`,
  });
  const part = (disposition: string, content: string, type = "") =>
    `--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n${type}\r\n${content}\r\n`;

  it.each([
    ["a form with a text field only", multipart(part('name="title"', "notes"))],
    ["the file in another field", multipart(part('name="document"; filename="notes.txt"', "Some notes."))],
    [
      "a browser form sent with no file chosen (a nameless empty part)",
      multipart(part('name="file"; filename=""', "", "Content-Type: application/octet-stream\r\n")),
    ],
    ["a JSON body", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }],
  ])("%s", async (_label, init) => {
    const answer = await json(await base.user.fetch(`/rag/kb/${base.slug}/docs`, init));
    expect(answer).toEqual({
      status: 422,
      body: {
        message: expect.any(String),
        error: { code: "validation_error", message: expect.any(String) },
        errors: { file: [expect.any(String)] },
      },
    });
    expect(await documentsOf(base.user, base.slug)).toEqual([]);
  });
});

describe('spec "Limits": a document of at most 50 MB', () => {
  let base: { user: AppUserHandle; slug: string };
  beforeAll(async () => {
    base = await freshBase();
  });

  it("50 MB + 1 byte: 400 file_too_large, answered promptly; the app goes on; nothing stored", async () => {
    const started = Date.now();
    const answer = await json(
      await s.upload(base.user, base.slug, Buffer.alloc(50 * MB + 1, 0x61), "big.txt"),
    );
    expect(answer).toEqual({
      status: 400,
      body: { error: { code: "file_too_large", message: expect.stringContaining("50 MB") } },
    });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await documentsOf(base.user, base.slug)).toEqual([]);
  });

  it("exactly 50 MB: not refused for its size (these zero bytes are refused for their content)", async () => {
    const answer = await json(await s.upload(base.user, base.slug, Buffer.alloc(50 * MB), "big.txt"));
    expect(answer.body?.error?.code).not.toBe("file_too_large");
    expect(answer).toEqual({
      status: 400,
      body: { error: { code: "unsupported_document", message: expect.any(String) } },
    });
    expect((await base.user.fetch("/rag/kb")).status).toBe(200);
  });
});

const VOLCANO = Buffer.from(
  "Volcano notes\n\nA volcano erupts when magma rises through a crack in the crust. " +
    "Lava cools into basalt, and volcanic ash can stay in the air for weeks.\n",
);

describe("Documents: a new upload of the same file name replaces the older one once it is ready", () => {
  afterAll(() => s.tei.setMode("normal"));

  it("both are listed while the new one is read; then one document, with the new passages", async () => {
    const { user, slug } = await freshBase();
    const old = await uploadAndWait(user, slug, documentFixture("notes.txt"), "kitchen.txt");
    expect(old.settled.status).toBe("ready");
    await s.tei.setMode("slow", { slowMs: 800 });
    const uploaded = await json(await s.upload(user, slug, VOLCANO, "kitchen.txt"));
    expect(uploaded.status).toBe(202);
    await waitFor(user, slug, uploaded.body.id, ["processing"]);
    expect((await documentsOf(user, slug)).map((d) => [d.id, d.status])).toEqual([
      [uploaded.body.id, "processing"],
      [old.queued.id, "ready"],
    ]);
    await s.tei.setMode("normal");
    const fresh = await waitFor(user, slug, uploaded.body.id);
    expect(fresh.status).toBe("ready");
    expect(await documentsOf(user, slug)).toEqual([fresh]);
    expect(await passagesOf(old.queued.id)).toEqual([]);
    expect((await passagesOf(fresh.id)).join(" ")).toContain("magma");
    const volcano = await sourcesFor(user, slug, "What happens when a volcano erupts?");
    expect(volcano[0]).toMatchObject({ document: "kitchen.txt", document_id: fresh.id });
    const creme = await sourcesFor(user, slug, "How long should crème brûlée chill?");
    expect(
      creme.every((source) => source.document_id === fresh.id && !source.passage.includes("brûlée")),
    ).toBe(true);
  });
});

describe("Documents: DELETE /rag/kb/{slug}/docs/{id}", () => {
  it("204; its passages are gone and no question finds them; then 404 {message}", async () => {
    const { user, slug } = await freshBase();
    const pdf = (await uploadAndWait(user, slug, documentFixture("two-pages.pdf"), "two-pages.pdf")).settled;
    const txt = (await uploadAndWait(user, slug, documentFixture("notes.txt"), "notes.txt")).settled;
    expect((await sourcesFor(user, slug, "How do glaciers form?"))[0]).toMatchObject({ document_id: pdf.id });

    const deleted = await user.fetch(`/rag/kb/${slug}/docs/${pdf.id}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    expect(await passagesOf(pdf.id)).toEqual([]);
    expect(await documentsOf(user, slug)).toEqual([txt]);
    const after = await sourcesFor(user, slug, "How do glaciers form?");
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((source) => source.document_id === txt.id && !/glacier/i.test(source.passage))).toBe(
      true,
    );

    const notFound = { status: 404, body: { message: expect.any(String) } };
    expect(await json(await user.fetch(`/rag/kb/${slug}/docs/${pdf.id}`, { method: "DELETE" }))).toEqual(
      notFound,
    );
    expect(await json(await user.fetch(`/rag/kb/${slug}/docs/not-an-id`, { method: "DELETE" }))).toEqual(
      notFound,
    );
    // A document of the user's other base is not this base's.
    const otherSlug = await s.createBase(user, "Another base");
    expect(await json(await user.fetch(`/rag/kb/${otherSlug}/docs/${txt.id}`, { method: "DELETE" }))).toEqual(
      notFound,
    );
    expect(await documentsOf(user, slug)).toEqual([txt]);

    // The last ready document deleted: the base cannot be asked.
    expect((await user.fetch(`/rag/kb/${slug}/docs/${txt.id}`, { method: "DELETE" })).status).toBe(204);
    const notReady = await json(await user.post(`/rag/kb/${slug}/chat`, { question: "Bread?" }));
    expect(notReady).toMatchObject({ status: 409, body: { error: { code: "knowledge_base_not_ready" } } });
  });
});

describe('spec "Rate limits": POST /rag/kb/{slug}/docs, 10 per minute per user, on the shared user counter', () => {
  it("after the base and 9 uploads, the next upload is 429 with Retry-After; creating a base (30) still works", async () => {
    const { user, slug } = await freshBase();
    for (let i = 1; i <= 9; i++) {
      const answer = await s.upload(user, slug, documentFixture("page-image.png"), `picture-${i}.png`);
      expect(answer.status).toBe(400);
      expect(answer.headers.get("x-ratelimit-limit")).toBe("10");
      expect(answer.headers.get("x-ratelimit-remaining")).toBe(String(9 - i));
    }
    const refused = await s.upload(user, slug, documentFixture("notes.txt"), "notes.txt");
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await documentsOf(user, slug)).toEqual([]);
    expect((await user.post("/rag/kb", { name: "Still allowed" })).status).toBe(201);
    // Another user has a counter of their own.
    const other = await freshBase();
    expect((await s.upload(other.user, other.slug, documentFixture("notes.txt"), "notes.txt")).status).toBe(
      202,
    );
  });
});
