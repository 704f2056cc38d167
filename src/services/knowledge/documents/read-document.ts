import { judgeContent } from "./document-format.ts";
import { type DocumentLimits, documentLimits } from "./document-limits.ts";
import { DocumentUnreadable } from "./document-unreadable.ts";
import { extractDocx } from "./extract-docx.ts";
import { extractPdf } from "./extract-pdf.ts";
import { extractMarkdown, extractPlainText } from "./extract-text.ts";
import type { DocumentFormat, ExtractedDocument } from "./extracted-document.ts";
import { type Passage, type SplitOptions, splitPassages } from "./split-passages.ts";

export { DocumentUnreadable } from "./document-unreadable.ts";

/** A document read for a knowledge base: its format, its pages (PDF) and its passages, in order. */
export interface ReadDocument {
  format: DocumentFormat;
  /** Number of pages (PDF only). */
  pages?: number;
  passages: Passage[];
}

/** Lower caps or other passage sizes than the defaults (tests, and installations that want them). */
export interface ReadDocumentOptions {
  limits?: Partial<DocumentLimits>;
  split?: Partial<SplitOptions>;
}

/**
 * Reads an uploaded document into passages: judges its format by content (the file name only
 * tells Markdown from plain text), extracts its text and splits it. Throws DocumentUnreadable,
 * whose `reason` is for the user, when the file is no document Zona reads, is damaged, encrypted,
 * holds no text, or passes a cap. Never logs: the content is the user's.
 */
export async function readDocument(
  bytes: Buffer,
  filename: string,
  options?: ReadDocumentOptions,
): Promise<ReadDocument> {
  const limits = documentLimits(options?.limits);
  if (bytes.length > limits.maxBytes) {
    throw new DocumentUnreadable(
      "too_large",
      `The file is larger than ${Math.floor(limits.maxBytes / (1024 * 1024))} MB, the most a knowledge base takes per file.`,
    );
  }
  const extracted = await extract(bytes, filename, limits);
  const passages = splitPassages(extracted.sections, options?.split);
  if (passages.length === 0) {
    throw new DocumentUnreadable("no_text", "The document holds no text.");
  }
  return {
    format: extracted.format,
    ...(extracted.pages === undefined ? {} : { pages: extracted.pages }),
    passages,
  };
}

async function extract(bytes: Buffer, filename: string, limits: DocumentLimits): Promise<ExtractedDocument> {
  const judged = judgeContent(bytes, filename);
  switch (judged.format) {
    case "pdf":
      return extractPdf(bytes, limits);
    case "docx":
      return extractDocx(bytes, limits);
    case "markdown":
      return extractMarkdown(judged.text, limits.maxTextChars);
    case "txt":
      return extractPlainText(judged.text, limits.maxTextChars);
  }
}
