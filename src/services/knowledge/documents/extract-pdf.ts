import { getDocumentProxy } from "unpdf";
import type { DocumentLimits } from "./document-limits.ts";
import { DocumentUnreadable } from "./document-unreadable.ts";
import type { ExtractedDocument } from "./extracted-document.ts";
import { pdfUnpackedSize } from "./pdf-streams.ts";
import { SectionBuilder } from "./section-builder.ts";

/** The parts of a pdf.js text item this file reads. */
interface TextPiece {
  str: string;
  transform: number[];
  height: number;
  hasEOL: boolean;
}

/** One visual line of a page: its text, its baseline and its font size. */
interface Line {
  text: string;
  y: number;
  size: number;
}

/**
 * The text of a PDF, page by page, with the page number on every paragraph. PDFs have no reliable
 * headings; each page is a section of its own (without a heading). Lines are joined into paragraphs; a paragraph
 * ends where the gap to the next line is clearly larger than the line spacing.
 */
export async function extractPdf(
  bytes: Uint8Array,
  limits: Pick<DocumentLimits, "maxPages" | "maxTextChars" | "maxPdfUnpackedBytes">,
): Promise<ExtractedDocument> {
  if (
    pdfUnpackedSize(
      Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      limits.maxPdfUnpackedBytes,
    ) === undefined
  ) {
    throw new DocumentUnreadable(
      "too_large",
      `The PDF unpacks to more than ${Math.floor(limits.maxPdfUnpackedBytes / (1024 * 1024))} MB of data, more than Zona reads from one file. Split it into smaller files and upload those.`,
    );
  }
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // pdf.js takes over (detaches) the buffer it is given, hence the copy. No font code is run
    // (isEvalSupported), and only errors would be printed: never a word of the document.
    pdf = await getDocumentProxy(new Uint8Array(bytes), {
      verbosity: 0,
      isEvalSupported: false,
      useSystemFonts: false,
      disableFontFace: true,
      enableXfa: false,
    });
  } catch (error) {
    throw openFailure(error);
  }
  try {
    const pages = pdf.numPages;
    if (pages > limits.maxPages) {
      throw new DocumentUnreadable(
        "too_large",
        `The PDF has ${pages.toLocaleString("en")} pages; Zona reads at most ${limits.maxPages.toLocaleString("en")} ${limits.maxPages === 1 ? "page" : "pages"} per file. Split it into smaller files and upload those.`,
      );
    }
    const sections = new SectionBuilder(limits.maxTextChars);
    let brokenPages = 0;
    for (let number = 1; number <= pages; number++) {
      let pieces: TextPiece[];
      try {
        const page = await pdf.getPage(number);
        const content = await page.getTextContent();
        pieces = content.items.filter((item): item is typeof item & TextPiece => "str" in item);
        page.cleanup();
      } catch {
        // One damaged page should not cost the others; a PDF with no readable page fails below.
        brokenPages += 1;
        continue;
      }
      // Each page its own section: a passage never runs from one page into the next, so the page
      // a source names holds all of its text.
      sections.heading("");
      for (const paragraph of paragraphs(lines(pieces))) sections.paragraph(paragraph, number);
    }
    const found = sections.finish();
    if (found.length === 0) {
      throw brokenPages > 0
        ? new DocumentUnreadable(
            "corrupt",
            "The PDF is damaged: none of its pages could be read. Save or export it again and upload the new file.",
          )
        : new DocumentUnreadable(
            "no_text",
            "The PDF has no text layer: its pages look like scanned images. Run it through text recognition (OCR) first, or upload the text as DOCX or TXT.",
          );
    }
    return { format: "pdf", pages, sections: found };
  } finally {
    await pdf.destroy().catch(() => {});
  }
}

function openFailure(error: unknown): DocumentUnreadable {
  const name = (error as { name?: unknown } | undefined)?.name;
  if (name === "PasswordException") {
    return new DocumentUnreadable(
      "encrypted",
      "The PDF is protected by a password. Save a copy without the password and upload that.",
      { cause: error },
    );
  }
  return new DocumentUnreadable(
    "corrupt",
    "The PDF is damaged and cannot be read (it may have been cut short). Save or export it again and upload the new file.",
    { cause: error },
  );
}

/** Groups text pieces into lines: a line ends at an end-of-line mark or where the baseline moves. */
function lines(pieces: TextPiece[]): Line[] {
  const found: Line[] = [];
  let current: Line | undefined;
  for (const piece of pieces) {
    const y = piece.transform[5] ?? 0;
    const size = Math.abs(piece.height) || Math.hypot(piece.transform[2] ?? 0, piece.transform[3] ?? 0) || 1;
    if (current && piece.str.trim() && Math.abs(y - current.y) > Math.max(size, current.size) / 2) {
      found.push(current);
      current = undefined;
    }
    if (!current) current = { text: "", y, size };
    current.text += piece.str;
    if (piece.str.trim()) current.size = Math.max(current.size, size);
    if (piece.hasEOL) {
      found.push(current);
      current = undefined;
    }
  }
  if (current) found.push(current);
  return found.filter((line) => line.text.trim());
}

/** Joins lines into paragraphs; a gap over 1.6 line heights, or a jump up (a new column), ends one. */
function paragraphs(all: Line[]): string[] {
  const found: string[] = [];
  let text = "";
  let previous: Line | undefined;
  for (const line of all) {
    const gap = previous ? previous.y - line.y : 0;
    if (previous && (gap > 1.6 * Math.max(previous.size, line.size) || gap < -previous.size)) {
      found.push(text);
      text = "";
    }
    const piece = line.text.trim();
    // A line broken after a hyphen keeps the hyphen and joins without a space ("well-known").
    text = !text ? piece : /\p{L}-$/u.test(text) ? text + piece : `${text} ${piece}`;
    previous = line;
  }
  if (text) found.push(text);
  return found;
}
