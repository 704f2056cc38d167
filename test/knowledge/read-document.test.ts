import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { DocumentProblem } from "../../src/services/knowledge/documents/document-unreadable.ts";
import { judgeFile } from "../../src/services/knowledge/documents/judge-file.ts";
import {
  DocumentUnreadable,
  type ReadDocumentOptions,
  readDocument,
} from "../../src/services/knowledge/documents/read-document.ts";

/** The upload's judgement, as the upload route makes it: from a file on disk. */
async function judged(bytes: Buffer, filename: string) {
  const folder = await mkdtemp(join(tmpdir(), "zona-judge-"));
  try {
    const path = join(folder, "upload");
    await writeFile(path, bytes);
    return await judgeFile(path, bytes.length, filename);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

const fixture = (name: string) => readFileSync(new URL(`../fixtures/documents/${name}`, import.meta.url));

/** The refusal readDocument throws, checked to be a DocumentUnreadable. */
async function refusal(
  bytes: Buffer,
  filename: string,
  options?: ReadDocumentOptions,
): Promise<DocumentUnreadable> {
  const error = await readDocument(bytes, filename, options).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(DocumentUnreadable);
  return error as DocumentUnreadable;
}

/** A copy of a DOCX whose ZIP directory claims `word/document.xml` unpacks to 100 bytes. */
function understated(docx: Buffer): Buffer {
  const copy = Buffer.from(docx);
  // The last occurrence of the name is in the central directory, 46 bytes into its entry.
  const entry = copy.lastIndexOf("word/document.xml") - 46;
  expect(copy.readUInt32LE(entry)).toBe(0x02014b50);
  copy.writeUInt32LE(100, entry + 24);
  return copy;
}

describe("knowledge-base documents are read (spec: PDF, DOCX, TXT, Markdown, up to 50 MB)", () => {
  it("reads a PDF page by page: a passage never runs from one page into the next", async () => {
    const read = await readDocument(fixture("two-pages.pdf"), "two-pages.pdf");
    expect(read.format).toBe("pdf");
    expect(read.pages).toBe(2);
    expect(read.passages.length).toBeGreaterThan(1);
    const first = read.passages[0];
    expect(first?.page).toBe(1);
    expect(first?.text).toMatch(/^Lighthouses guide ships along dangerous coasts at night\./);
    // Page 2 is about glaciers only: passages starting there never mention lighthouses.
    const onPage2 = read.passages.filter((passage) => passage.page === 2);
    expect(onPage2.length).toBeGreaterThan(0);
    for (const passage of onPage2) expect(passage.text).not.toMatch(/lighthouse/i);
    for (const passage of read.passages.filter((passage) => passage.page === 1)) {
      expect(passage.text).not.toMatch(/glacier/i);
    }
    expect(onPage2.at(-1)?.text).toMatch(/Ice cores drilled from glaciers/);
    for (const passage of read.passages.filter((passage) =>
      /^Glaciers are rivers of ice/.test(passage.text),
    )) {
      expect(passage.page).toBe(2);
    }
    for (const passage of read.passages) expect(passage.heading).toBeUndefined();
  });

  it("joins a PDF's wrapped lines into paragraphs, broken where the page leaves a gap", async () => {
    const read = await readDocument(fixture("two-pages.pdf"), "two-pages.pdf", {
      split: { targetChars: 5000 },
    });
    const text = read.passages.map((passage) => passage.text).join("\n\n");
    expect(text).toContain("so that sailors can tell one tower from another.");
    expect(text).toContain("museums or holiday homes.\n\nLighthouses are painted in bands");
    expect(text).toContain("the people who live along them.");
  });

  it("carries Word headings (Heading 1, Heading 2) through to the passages under them", async () => {
    const read = await readDocument(fixture("headings.docx"), "headings.docx");
    expect(read.format).toBe("docx");
    expect(read.pages).toBeUndefined();
    expect(
      read.passages.map((passage) => [passage.heading, passage.text.split(" ").slice(0, 3).join(" ")]),
    ).toEqual([
      ["Honey bees", "Honey bees live"],
      ["The hive", "Workers build the"],
      ["Honey", "Bees make honey"],
      ["Ants", "Ants have lived"],
      ["Leafcutter ants", "Leafcutter ants do"],
    ]);
  });

  it("carries Markdown headings (ATX and setext) through; front matter and code lines are no headings", async () => {
    const read = await readDocument(fixture("notes.md"), "notes.md");
    expect(read.format).toBe("markdown");
    expect(read.passages.map((passage) => passage.heading)).toEqual([
      "Tides",
      "Spring and neap tides",
      "Waves",
      "Swell",
    ]);
    const text = read.passages.map((passage) => passage.text).join("\n");
    expect(text).not.toContain("title: Field notes");
    expect(read.passages[1]?.text).toContain("- New moon: spring tide\n- First quarter: neap tide");
    expect(read.passages[2]?.text).toContain("# a comment in a code block, not a heading");
    expect(read.passages[3]?.text).toContain("raised them 🌊, sorted by speed");
  });

  it("reads a TXT file with CRLF line ends: paragraphs, accents and emoji kept, no headings", async () => {
    const read = await readDocument(fixture("notes.txt"), "notes.txt");
    expect(read.format).toBe("txt");
    expect(read.passages).toHaveLength(1);
    const [passage] = read.passages;
    expect(passage?.heading).toBeUndefined();
    expect(passage?.text).not.toContain("\r");
    expect(passage?.text).toMatch(/^Kitchen notes\n\nCrème brûlée needs a hot grill/);
    expect(passage?.text).toContain("about forty minutes at 220 °C.\n\nKeep the sourdough");
    expect(passage?.text.endsWith("flour and water. 🍞")).toBe(true);
  });

  it("reads UTF-16 text with a byte-order mark", async () => {
    const text = "Über die Gletscher der Alpen.\r\n\r\nZweiter Absatz.";
    const read = await readDocument(
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, "utf16le")]),
      "a.txt",
    );
    expect(read.passages.map((passage) => passage.text)).toEqual([
      "Über die Gletscher der Alpen.\n\nZweiter Absatz.",
    ]);
  });

  it("prints nothing while reading (the content is the user's)", async () => {
    const spies = (["log", "info", "warn", "error", "debug"] as const).map((method) =>
      vi.spyOn(console, method).mockImplementation(() => {}),
    );
    try {
      for (const name of ["two-pages.pdf", "headings.docx", "notes.md", "notes.txt"])
        await readDocument(fixture(name), name);
      for (const name of ["scanned.pdf", "truncated.pdf", "encrypted.pdf"])
        await refusal(fixture(name), name);
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

describe("the format is judged by content, not by file name or declared type", () => {
  const cases: Array<[string, Buffer, string, string]> = [
    ["a PDF named notes.txt is a PDF", fixture("two-pages.pdf"), "notes.txt", "pdf"],
    ["a DOCX named report.pdf is a DOCX", fixture("headings.docx"), "report.pdf", "docx"],
    ["Markdown content named notes.txt is Markdown", fixture("notes.md"), "notes.txt", "markdown"],
    ["Markdown content with no name is Markdown", fixture("notes.md"), "", "markdown"],
    [
      "plain text named notes.md is Markdown (the name tells Markdown from text)",
      fixture("notes.txt"),
      "notes.md",
      "markdown",
    ],
    ["plain text named notes.MARKDOWN is Markdown", fixture("notes.txt"), "notes.MARKDOWN", "markdown"],
    ["plain text named notes.pdf is text", fixture("notes.txt"), "notes.pdf", "txt"],
    [
      "one '# ' line alone does not make Markdown",
      Buffer.from("# just a note\nsecond line\n"),
      "a.txt",
      "txt",
    ],
    ["a list alone does not make Markdown", Buffer.from("Shopping:\n- eggs\n- flour\n"), "a.txt", "txt"],
    ["text mentioning %PDF- is text", Buffer.from("The header %PDF-1.7 starts every PDF.\n"), "a.txt", "txt"],
  ];
  it.each(cases)("%s", async (_title, bytes, filename, format) => {
    expect(await judged(bytes, filename)).toBe(format);
    expect((await readDocument(bytes, filename)).format).toBe(format);
  });

  it("a PNG named report.pdf is refused, saying it is a PNG image", async () => {
    const error = await refusal(fixture("page-image.png"), "report.pdf");
    expect(error.problem).toBe("unsupported");
    expect(error.reason).toBe(
      "This file is a PNG image, not a document Zona can read. Zona reads PDF, Word (DOCX), plain text and Markdown files.",
    );
    await expect(judged(fixture("page-image.png"), "report.pdf")).rejects.toThrow(error.reason);
  });
});

describe("documents that cannot be read are refused with a reason in plain words", () => {
  const docx = fixture("headings.docx");
  const cases: Array<[string, Buffer, string, ReadDocumentOptions | undefined, DocumentProblem, RegExp]> = [
    [
      "a scanned PDF with no text layer",
      fixture("scanned.pdf"),
      "scan.pdf",
      undefined,
      "no_text",
      /no text layer.*OCR/,
    ],
    ["a PDF cut short", fixture("truncated.pdf"), "cut.pdf", undefined, "corrupt", /PDF is damaged/],
    [
      "a PDF with a password",
      fixture("encrypted.pdf"),
      "secret.pdf",
      undefined,
      "encrypted",
      /protected by a password/,
    ],
    ["a PNG", fixture("page-image.png"), "image.png", undefined, "unsupported", /PNG image/],
    ["an empty file", Buffer.alloc(0), "empty.txt", undefined, "empty", /^The file is empty\.$/],
    [
      "a text file of blank lines",
      Buffer.from(" \r\n\t\r\n"),
      "blank.txt",
      undefined,
      "no_text",
      /holds no text/,
    ],
    [
      "a ZIP that is not a DOCX",
      fixture("not-a-docx.zip"),
      "notes.docx",
      undefined,
      "unsupported",
      /ZIP archive, not a Word document/,
    ],
    ["a DOCX cut short", docx.subarray(0, 6000), "cut.docx", undefined, "corrupt", /damaged/],
    [
      "an old binary Word .doc",
      Buffer.from("d0cf11e0a1b11ae1000000000000000000000000", "hex"),
      "old.doc",
      undefined,
      "unsupported",
      /old-style Office file.*DOCX/,
    ],
    [
      "an RTF file",
      Buffer.from("{\\rtf1\\ansi Hello}"),
      "a.rtf",
      undefined,
      "unsupported",
      /Rich Text \(RTF\)/,
    ],
    [
      "binary bytes",
      Buffer.from([1, 2, 3, 0, 0, 200, 4, 5]),
      "a.txt",
      undefined,
      "unsupported",
      /not a document Zona can read/,
    ],
    [
      "text not in UTF-8 (Latin-1)",
      Buffer.from("Cr\xe8me br\xfbl\xe9e", "latin1"),
      "a.txt",
      undefined,
      "unsupported",
      /not in UTF-8/,
    ],
    [
      "a DOCX whose text is over the cap",
      fixture("large-text.docx"),
      "big.docx",
      { limits: { maxTextChars: 100_000 } },
      "too_large",
      /more than 100,000 characters of text.*Split it/,
    ],
    [
      "a DOCX that unpacks to more XML than the cap (zip bomb)",
      fixture("large-text.docx"),
      "bomb.docx",
      { limits: { maxDocxXmlBytes: 512 * 1024 } },
      "too_large",
      /unpacks to more than 524,288 bytes/,
    ],
    [
      "a DOCX whose ZIP directory under-states the unpacked size (zip bomb)",
      understated(fixture("large-text.docx")),
      "bomb.docx",
      { limits: { maxDocxXmlBytes: 512 * 1024 } },
      "too_large",
      /unpacks to more than/,
    ],
    [
      "a DOCX that unpacks to more than the whole-archive cap",
      docx,
      "a.docx",
      { limits: { maxDocxUnpackedBytes: 20_000 } },
      "too_large",
      /unpacks to more than 20,000 bytes/,
    ],
    [
      "a PDF over the page cap",
      fixture("two-pages.pdf"),
      "a.pdf",
      { limits: { maxPages: 1 } },
      "too_large",
      /has 2 pages; Zona reads at most 1 page/,
    ],
    [
      "a text over the text cap",
      fixture("notes.txt"),
      "a.txt",
      { limits: { maxTextChars: 100 } },
      "too_large",
      /more than 100 characters/,
    ],
    [
      "a file over the size cap",
      fixture("notes.txt"),
      "a.txt",
      { limits: { maxBytes: 100 } },
      "too_large",
      /larger than/,
    ],
  ];
  it.each(cases)("%s", async (_title, bytes, filename, options, problem, reason) => {
    const error = await refusal(bytes, filename, options);
    expect(error.problem).toBe(problem);
    expect(error.reason).toMatch(reason);
    expect(error.message).toBe(error.reason);
  });

  it("reads the large DOCX under the default caps", async () => {
    const read = await readDocument(fixture("large-text.docx"), "big.docx");
    expect(read.format).toBe("docx");
    expect(read.passages.length).toBeGreaterThan(500);
    for (const passage of read.passages) expect(passage.text.length).toBeLessThanOrEqual(1000);
  });
});
