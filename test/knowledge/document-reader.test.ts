import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DocumentUnreadable } from "../../src/services/knowledge/documents/document-unreadable.ts";
import { DocumentReader } from "../../src/services/knowledge/reading/document-reader.ts";
import { readPassageBatches } from "../../src/services/knowledge/reading/passage-file.ts";
import { Slots } from "../../src/slots.ts";
import { type HostileDocument, hostileDocuments } from "./hostile-documents.ts";
import { documentFixture } from "./kb-stack.ts";

const corpus = hostileDocuments();
const named = (name: string) => corpus.find((document) => document.name === name)?.bytes ?? Buffer.alloc(0);
let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "zona-reader-test-"));
});
afterAll(() => rm(folder, { recursive: true, force: true }));

async function readThrough(
  reader: DocumentReader,
  name: string,
  bytes: Buffer,
  signal?: AbortSignal,
): Promise<{ passages: number; stored: number } | { reason: string; problem: string }> {
  const path = join(folder, `${name}.upload`);
  const passagesPath = join(folder, `${name}.passages`);
  await writeFile(path, bytes);
  try {
    const facts = await reader.read({ path, filename: name, passagesPath }, signal);
    let stored = 0;
    for await (const batch of readPassageBatches(passagesPath, 32)) stored += batch.length;
    return { passages: facts.passages, stored };
  } catch (error) {
    if (error instanceof DocumentUnreadable) return { reason: error.reason, problem: error.problem };
    throw error;
  } finally {
    await rm(path, { force: true });
    await rm(passagesPath, { force: true });
  }
}

const mayEndByTime = (document: HostileDocument) =>
  document.ends === "either" || (document.reason?.test("took longer than") ?? false);

describe("Untrusted work: documents are read in a process of their own, with a memory and a time cap", () => {
  // A time cap with room for a machine the suite keeps busy (the reader runs at a lower priority):
  // the documents read here must end as their table says, not by the clock.
  const reader = new DocumentReader({ memoryMb: 512, timeoutMs: 30_000, concurrency: 2 });
  // A shorter time cap for the documents that may end by it (the others end by a size bound, whose
  // reason the test checks): they end sooner.
  const hostileReader = new DocumentReader({ memoryMb: 512, timeoutMs: 5_000, concurrency: 2 });

  it("an ordinary PDF is read there: its passages come back through the passage file, in order", async () => {
    const result = await readThrough(reader, "two-pages.pdf", documentFixture("two-pages.pdf"));
    expect(result).toMatchObject({ passages: expect.any(Number) });
    if ("passages" in result) {
      expect(result.passages).toBeGreaterThan(0);
      expect(result.stored).toBe(result.passages);
    }
  });

  for (const document of corpus) {
    it(`hostile corpus: ${document.name} (${Math.round(document.bytes.length / 1024)} KB) ends ${document.ends === "either" ? "read or refused" : document.ends === "ready" ? "read" : "refused with its reason"}, and the test process is untouched`, async () => {
      const heapBefore = process.memoryUsage().heapUsed;
      const result = await readThrough(
        mayEndByTime(document) ? hostileReader : reader,
        document.name,
        document.bytes,
      );
      if (document.ends === "ready") expect(result).toMatchObject({ passages: expect.any(Number) });
      if (document.ends === "failed") expect(result).toMatchObject({ reason: expect.any(String) });
      if ("reason" in result && document.reason) expect(result.reason).toMatch(document.reason);
      if ("passages" in result) expect(result.stored).toBe(result.passages);
      // The reading's memory was the reading process's: this one holds nothing of it.
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
    }, 60_000);
  }

  it("a reading past the memory cap is stopped and refused as too demanding (the cap in the reason)", async () => {
    const small = new DocumentReader({ memoryMb: 128, timeoutMs: 30_000, concurrency: 1 });
    const result = await readThrough(small, "tiny.docx", named("tiny-paragraphs.docx"));
    expect(result).toMatchObject({
      problem: "too_demanding",
      reason: expect.stringMatching(/128 MB of memory/),
    });
  }, 60_000);

  it("a reading past the time cap is stopped and refused as too demanding (the cap in the reason)", async () => {
    const quick = new DocumentReader({ memoryMb: 512, timeoutMs: 1_000, concurrency: 1 });
    const result = await readThrough(quick, "nested.pdf", named("nested-q-50k.pdf"));
    expect(result).toMatchObject({
      problem: "too_demanding",
      reason: expect.stringMatching(/longer than 1 seconds/),
    });
  }, 30_000);

  it("an aborted reading (the service closing) stops its process and rejects with the abort, deciding nothing", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("closing")), 500);
    await expect(
      readThrough(reader, "aborted.pdf", named("nested-q-50k.pdf"), controller.signal),
    ).rejects.toThrow("closing");
  }, 30_000);

  it("slots: at most N readings at once, the others wait their turn in order", async () => {
    const slots = new Slots(1);
    const order: string[] = [];
    const first = await slots.take();
    const second = slots.take().then((release) => {
      order.push("second");
      return release;
    });
    const third = slots.take().then((release) => {
      order.push("third");
      release();
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual([]);
    first();
    (await second)();
    await third;
    expect(order).toEqual(["second", "third"]);
  });
});

describe("Untrusted work: passages travel from the reading process through a file", () => {
  it("the passage file of a real document holds what the reader says", async () => {
    const path = join(folder, "notes.md");
    await writeFile(path, documentFixture("notes.md"));
    const reader = new DocumentReader({ memoryMb: 512, timeoutMs: 10_000, concurrency: 1 });
    const facts = await reader.read({ path, filename: "notes.md", passagesPath: `${path}.passages` });
    const lines = (await readFile(`${path}.passages`, "utf8")).trim().split("\n");
    expect(lines).toHaveLength(facts.passages);
    expect(facts.format).toBe("markdown");
  });
});
