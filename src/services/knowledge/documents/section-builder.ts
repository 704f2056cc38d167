import { DocumentUnreadable } from "./document-unreadable.ts";
import type { ExtractedSection } from "./extracted-document.ts";

/**
 * Collects the paragraphs an extractor finds into sections, one per heading, and stops the
 * extraction as soon as the text passes the cap (a zip bomb or a huge file fails early, before
 * the rest is read).
 */
export class SectionBuilder {
  private readonly sections: ExtractedSection[] = [];
  private current: ExtractedSection = { blocks: [] };
  private chars = 0;
  private readonly maxChars: number;

  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }

  /** Starts a new section, even when the heading repeats the previous one. */
  heading(text: string): void {
    this.close();
    const heading = text.replace(/\s+/g, " ").trim();
    this.count(heading.length);
    this.current = heading ? { heading, blocks: [] } : { blocks: [] };
  }

  /** Adds a paragraph to the current section; blank ones are skipped. */
  paragraph(text: string, page?: number): void {
    if (!/\S/.test(text)) return;
    this.count(text.length);
    this.current.blocks.push(page === undefined ? { text } : { text, page });
  }

  /** Characters collected so far. */
  get length(): number {
    return this.chars;
  }

  /** The sections that hold text, in order. */
  finish(): ExtractedSection[] {
    this.close();
    return this.sections;
  }

  private close(): void {
    if (this.current.blocks.length > 0) this.sections.push(this.current);
    this.current = { blocks: [] };
  }

  private count(chars: number): void {
    this.chars += chars;
    if (this.chars > this.maxChars) throw tooMuchText(this.maxChars);
  }
}

/** The refusal for a document over the text cap. */
export function tooMuchText(maxChars: number): DocumentUnreadable {
  return new DocumentUnreadable(
    "too_large",
    `The document holds more than ${maxChars.toLocaleString("en")} characters of text, the most Zona reads from one file. Split it into smaller files and upload those.`,
  );
}
