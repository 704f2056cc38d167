import type { ExtractedSection } from "./extracted-document.ts";
import { nextStart, passageEnd } from "./passage-cuts.ts";

/** How documents are cut into passages. */
export interface SplitOptions {
  /** Longest passage, in characters (UTF-16 code units, as JavaScript counts them). */
  targetChars: number;
  /** About how much of a passage's end the next passage of the same section repeats. */
  overlapChars: number;
}

/** About 1,000 characters (a few hundred tokens for the embedding model), 150 repeated. */
export const DEFAULT_SPLIT_OPTIONS: Readonly<SplitOptions> = Object.freeze({
  targetChars: 1000,
  overlapChars: 150,
});

/** A piece of a document: what is embedded, stored and given to the model as a source. */
export interface Passage {
  text: string;
  /** 1-based page where the passage starts (PDF only). */
  page?: number;
  /** The heading of the section the passage belongs to, if any. */
  heading?: string;
}

/**
 * Cuts sections into passages of at most `targetChars` characters. A passage never crosses a
 * heading; within a section, consecutive passages overlap by up to `overlapChars` (in whole
 * words) so a sentence cut in two is whole in one of them. Cuts fall at a paragraph break, else a
 * sentence end, else between words (see passageEnd); only a word longer than the target is cut
 * inside. Whitespace is normalised (runs of spaces become one, line breaks are kept, paragraphs
 * are separated by a blank line, text is in Unicode NFC); empty passages are dropped.
 */
export function splitPassages(
  sections: readonly ExtractedSection[],
  options?: Partial<SplitOptions>,
): Passage[] {
  const { targetChars, overlapChars } = { ...DEFAULT_SPLIT_OPTIONS, ...options };
  if (!Number.isInteger(targetChars) || targetChars < 1)
    throw new RangeError("targetChars must be a positive integer");
  if (!Number.isInteger(overlapChars) || overlapChars < 0 || overlapChars >= targetChars) {
    throw new RangeError("overlapChars must be an integer from 0 to less than targetChars");
  }
  const passages: Passage[] = [];
  for (const section of sections) {
    const { text, starts, pages } = sectionText(section);
    let start = 0;
    let previousEnd = 0;
    while (start < text.length) {
      const end = passageEnd(text, start, Math.max(start, previousEnd) + 1, targetChars);
      const passage = text.slice(start, end).trim();
      if (passage) {
        const page = pages[paragraphAt(starts, start)];
        passages.push({
          text: passage,
          ...(page === undefined ? {} : { page }),
          ...(section.heading === undefined ? {} : { heading: section.heading }),
        });
      }
      if (end >= text.length) break;
      previousEnd = end;
      start = nextStart(text, start, end, overlapChars);
    }
  }
  return passages;
}

/** Whitespace made regular: the splitter then only needs to know " ", "\n" and "\n\n". */
export function normaliseWhitespace(text: string): string {
  return text
    .normalize("NFC")
    .replace(/[\u200b\ufeff]/g, "")
    .replace(/\r\n?|[\u0085\u2028\u2029]/g, "\n")
    .replace(/(?!\n)\p{Cc}/gu, " ")
    .replace(/[^\S\n]+/g, " ")
    .replace(/ ?\n[\n ]*/g, "\n")
    .trim();
}

/** The section's paragraphs joined by blank lines, with where each starts and its page. */
function sectionText(section: ExtractedSection): {
  text: string;
  starts: number[];
  pages: Array<number | undefined>;
} {
  const parts: string[] = [];
  const starts: number[] = [];
  const pages: Array<number | undefined> = [];
  let length = 0;
  for (const block of section.blocks) {
    const text = normaliseWhitespace(block.text);
    if (!text) continue;
    if (parts.length > 0) length += 2;
    starts.push(length);
    pages.push(block.page);
    parts.push(text);
    length += text.length;
  }
  return { text: parts.join("\n\n"), starts, pages };
}

/** Index of the paragraph holding offset `at` (the last one starting at or before it). */
function paragraphAt(starts: number[], at: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if ((starts[middle] ?? 0) <= at) low = middle;
    else high = middle - 1;
  }
  return low;
}
