import { decodeText } from "./decode-text.ts";
import { DocumentUnreadable } from "./document-unreadable.ts";
import { looksLikeZip, readZipDirectory, type ZipEntry } from "./zip-directory.ts";

/** A document's format judged from its content; text formats come with their decoded text. */
export type JudgedDocument = { format: "pdf" | "docx" } | { format: "txt" | "markdown"; text: string };

const ACCEPTED = "Zona reads PDF, Word (DOCX), plain text and Markdown files.";

/**
 * The format rule. Content decides, never the name or the declared type alone:
 * - PDF: starts with `%PDF-`; or has it within the first 1,024 bytes (readers allow junk before
 *   it) and `%%EOF` within the last 1,024, so a text file that merely mentions `%PDF-` stays text;
 * - DOCX: a ZIP archive (`PK\x03\x04`) whose directory holds `word/document.xml`;
 * - text: anything else that decodes as UTF-8 (or UTF-16 with a byte-order mark), see decodeText;
 * - text is Markdown when the name ends in .md or .markdown, or when the content clearly is
 *   Markdown (see looksLikeMarkdown); otherwise TXT.
 * Everything else is refused, naming what the file seems to be when that is known.
 */
export function judgeContent(bytes: Buffer, filename: string): JudgedDocument {
  if (bytes.length === 0) throw new DocumentUnreadable("empty", "The file is empty.");
  if (looksLikePdf(bytes)) return { format: "pdf" };
  if (looksLikeZip(bytes)) return { format: judgeZip(bytes) };
  // RTF and PostScript are text underneath, but their text is markup, not the document's words.
  const markup = knownFile(bytes, TEXT_SIGNATURES);
  if (markup) throw new DocumentUnreadable("unsupported", markup);
  const decoded = decodeText(bytes);
  if (!decoded.ok) {
    // Binary signatures are only looked at now: some are plain letters a text file could start with.
    const known = knownFile(bytes, BINARY_SIGNATURES);
    throw new DocumentUnreadable(
      "unsupported",
      known ??
        (decoded.why === "not_utf8"
          ? `The file is not a PDF or Word document, and its text is not in UTF-8. Save it as UTF-8 text and upload it again. ${ACCEPTED}`
          : `The file is not a document Zona can read. ${ACCEPTED}`),
    );
  }
  const markdown = MARKDOWN_NAME.test(filename) || looksLikeMarkdown(decoded.text);
  return { format: markdown ? "markdown" : "txt", text: decoded.text };
}

/** The PDF rule: `%PDF-` at the start, or near it with `%%EOF` at the end (`tail`: the last bytes). */
export function looksLikePdf(bytes: Buffer, tail: Buffer = bytes): boolean {
  if (bytes.subarray(0, 5).toString("latin1") === "%PDF-") return true;
  return bytes.subarray(0, 1024).includes("%PDF-") && tail.subarray(-1024).includes("%%EOF");
}

const MARKDOWN_NAME = /\.(md|markdown)$/i;
const ATX_HEADING = /^ {0,3}#{1,6}[ \t]+\S/;
const LIST_ITEM = /^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\S/;
const LINK = /\[[^\]\n]+\]\([^)\s]+[^)]*\)/;
const FENCE = /^ {0,3}(?:```|~~~)/;

/**
 * Whether text reads as Markdown: at least one ATX heading (`# Title`) plus at least one more
 * Markdown feature (another heading, a list item, a link `[text](url)` or a code fence), looking
 * at the first 64 KB. A heading alone is not enough (a plain note may start a line with "# "), and
 * lists alone are not either (plain text has them too). Lines inside code fences do not count.
 */
export function looksLikeMarkdown(text: string): boolean {
  let headings = 0;
  let features = 0;
  let fenced = false;
  for (const line of text.slice(0, 65_536).split(/\r\n|\r|\n/)) {
    if (FENCE.test(line)) {
      features += fenced ? 0 : 1;
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    if (ATX_HEADING.test(line)) headings += 1;
    else if (LIST_ITEM.test(line) || LINK.test(line)) features += 1;
    if (headings >= 1 && headings + features >= 2) return true;
  }
  return false;
}

function judgeZip(bytes: Buffer): "docx" {
  return judgeZipEntries(readZipDirectory(bytes));
}

/** The ZIP rule on an archive's directory (undefined: none could be read). */
export function judgeZipEntries(entries: ZipEntry[] | undefined): "docx" {
  if (!entries) {
    throw new DocumentUnreadable(
      "corrupt",
      "The file looks like a Word document or a ZIP archive but is damaged (it may have been cut short). Save or export it again and upload the new file.",
    );
  }
  const names = new Set(entries.map((entry) => entry.name));
  const main = entries.find((entry) => entry.name === "word/document.xml");
  if (main) {
    if (main.flags & 1) throw encryptedWord();
    return "docx";
  }
  if (names.has("EncryptedPackage")) throw encryptedWord();
  if (names.has("mimetype") && names.has("content.xml")) {
    throw new DocumentUnreadable(
      "unsupported",
      `This is an OpenDocument file (such as .odt), which is not supported: save it as DOCX or PDF and upload that. ${ACCEPTED}`,
    );
  }
  if (names.has("xl/workbook.xml") || names.has("ppt/presentation.xml")) {
    throw new DocumentUnreadable(
      "unsupported",
      `This is an Excel or PowerPoint file, which is not supported. ${ACCEPTED}`,
    );
  }
  throw new DocumentUnreadable(
    "unsupported",
    `This is a ZIP archive, not a Word document: upload the documents inside it one by one. ${ACCEPTED}`,
  );
}

function encryptedWord(): DocumentUnreadable {
  return new DocumentUnreadable(
    "encrypted",
    "The Word document is protected by a password. Save a copy without the password and upload that.",
  );
}

/** A file signature and what to tell the user about such a file. */
interface Signature {
  magic: string;
  at?: number;
  what: string;
  advice?: string;
}

/** Formats whose bytes decode as text but are no document text. */
const TEXT_SIGNATURES: Signature[] = [
  { magic: "%!PS", what: "a PostScript file", advice: "Convert it to PDF first." },
  { magic: "{\\rtf", what: "a Rich Text (RTF) file", advice: "Save it as DOCX, PDF or plain text." },
];

/** Common binary files people upload by mistake, so the refusal can say what the file is. */
const BINARY_SIGNATURES: Signature[] = [
  { magic: "\x89PNG\r\n\x1a\n", what: "a PNG image" },
  { magic: "\xff\xd8\xff", what: "a JPEG image" },
  { magic: "GIF8", what: "a GIF image" },
  { magic: "RIFF", what: "a media file (WebP, WAV or AVI)" },
  { magic: "II*\x00", what: "a TIFF image" },
  { magic: "MM\x00*", what: "a TIFF image" },
  { magic: "ftyp", at: 4, what: "a video, sound or HEIC image file" },
  { magic: "ID3", what: "an MP3 sound file" },
  { magic: "\x1f\x8b", what: "a compressed (gzip) file" },
  { magic: "7z\xbc\xaf\x27\x1c", what: "a 7-Zip archive" },
  { magic: "Rar!", what: "a RAR archive" },
  { magic: "PK\x05\x06", what: "an empty ZIP archive" },
  {
    magic: "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
    what: "an old-style Office file (such as a Word .doc) or a password-protected Office document",
    advice: "Save it as DOCX without a password, or as PDF.",
  },
];

function knownFile(bytes: Buffer, signatures: Signature[]): string | undefined {
  for (const { magic, at = 0, what, advice } of signatures) {
    if (bytes.subarray(at, at + magic.length).equals(Buffer.from(magic, "latin1"))) {
      return `This file is ${what}, not a document Zona can read.${advice ? ` ${advice}` : ""} ${ACCEPTED}`;
    }
  }
  return undefined;
}
