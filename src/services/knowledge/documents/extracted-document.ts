/** The document formats a knowledge base takes: PDF, DOCX, TXT, Markdown. */
export type DocumentFormat = "pdf" | "docx" | "txt" | "markdown";

/** One paragraph of extracted text (a list item, a table cell, a code block count as one). */
export interface ExtractedBlock {
  text: string;
  /** 1-based page the paragraph is on (PDF only). */
  page?: number;
}

/**
 * A run of paragraphs under one heading. Passages never cross from one section to the next, so
 * every heading starts a new section, even one with the same text as the previous heading.
 */
export interface ExtractedSection {
  /** The heading this text belongs to; absent for text before the first heading (or no headings). */
  heading?: string;
  blocks: ExtractedBlock[];
}

/** A document's text as the extractors hand it over, before splitting into passages. */
export interface ExtractedDocument {
  format: DocumentFormat;
  /** Number of pages (PDF only). */
  pages?: number;
  sections: ExtractedSection[];
}
