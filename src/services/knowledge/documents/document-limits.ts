/**
 * Caps that keep hostile documents from eating the memory or the time of the ingest job. Each can
 * be lowered per call (tests do) but the defaults are what uploads get.
 */
export interface DocumentLimits {
  /** Largest file accepted, in bytes (uploads may be up to 50 MB). */
  maxBytes: number;
  /** Most pages a PDF may have; counted before any page is read. */
  maxPages: number;
  /** Most characters of text extracted from one document, any format. */
  maxTextChars: number;
  /** Most bytes a DOCX may unpack to, all its parts together (checked by really inflating them). */
  maxDocxUnpackedBytes: number;
  /** Most bytes of XML a DOCX may unpack to: the parts the Word reader parses into memory. */
  maxDocxXmlBytes: number;
  /** Most bytes the compressed streams of a PDF may unpack to, all together (checked by inflating them). */
  maxPdfUnpackedBytes: number;
}

const MB = 1024 * 1024;

/** The limits uploads get. */
export const DEFAULT_DOCUMENT_LIMITS: Readonly<DocumentLimits> = Object.freeze({
  maxBytes: 50 * MB,
  maxPages: 2_000,
  // About 10,000 pages of prose: far above real documents, low enough to keep one job's memory sane.
  maxTextChars: 20_000_000,
  // A 50 MB upload of photos unpacks to about its own size; only a zip bomb gets near this.
  maxDocxUnpackedBytes: 200 * MB,
  // Parsing XML costs several times its size in memory; 64 MB of XML is thousands of pages.
  maxDocxXmlBytes: 64 * MB,
  // Text, fonts and pictures of a 50 MB PDF unpack to a few times its size; a bomb to thousands.
  maxPdfUnpackedBytes: 256 * MB,
});

/** The defaults with the given overrides. */
export function documentLimits(overrides?: Partial<DocumentLimits>): DocumentLimits {
  return { ...DEFAULT_DOCUMENT_LIMITS, ...overrides };
}
