import type { ExtractedDocument } from "./extracted-document.ts";
import { SectionBuilder, tooMuchText } from "./section-builder.ts";

const LINE_BREAK = /\r\n|\r|\n/;

/** A plain-text file: paragraphs are separated by blank lines; there are no headings. */
export function extractPlainText(text: string, maxChars: number): ExtractedDocument {
  if (text.length > maxChars) throw tooMuchText(maxChars);
  const sections = new SectionBuilder(maxChars);
  let paragraph: string[] = [];
  for (const line of text.split(LINE_BREAK)) {
    if (/\S/.test(line)) {
      paragraph.push(line);
    } else {
      sections.paragraph(paragraph.join("\n"));
      paragraph = [];
    }
  }
  sections.paragraph(paragraph.join("\n"));
  return { format: "txt", sections: sections.finish() };
}

const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const SETEXT_UNDERLINE = /^ {0,3}(?:=+|-+)[ \t]*$/;
const THEMATIC_BREAK = /^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** A paragraph starting like this is a list item or a quote, which an underline cannot make a heading. */
const NOT_SETEXT = /^ {0,3}(?:[-*+>]|\d{1,9}[.)])(?:[ \t]|$)/;

/**
 * A Markdown file: ATX (`## Title`) and setext (`Title` over `===` or `---`) headings start
 * sections; paragraphs are separated by blank lines; a fenced code block is one paragraph (its
 * fences dropped, a `#` inside it is no heading); YAML front matter at the top is skipped.
 * Inline markup is kept as it is: it is still readable text for the model.
 */
export function extractMarkdown(text: string, maxChars: number): ExtractedDocument {
  if (text.length > maxChars) throw tooMuchText(maxChars);
  const sections = new SectionBuilder(maxChars);
  const lines = text.split(LINE_BREAK);
  let paragraph: string[] = [];
  let fence: string | undefined;
  const flush = () => {
    sections.paragraph(paragraph.join("\n"));
    paragraph = [];
  };
  for (let i = frontMatterEnd(lines); i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fenceMark = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (closesFence(line, fence)) {
        fence = undefined;
        flush();
      } else {
        paragraph.push(line);
      }
      continue;
    }
    if (fenceMark) {
      flush();
      fence = fenceMark;
      continue;
    }
    const atx = ATX_HEADING.exec(line);
    if (atx) {
      flush();
      sections.heading(withoutClosingHashes(atx[2] ?? ""));
      continue;
    }
    if (SETEXT_UNDERLINE.test(line) && paragraph.length > 0 && !NOT_SETEXT.test(paragraph[0] ?? "")) {
      const heading = paragraph.join(" ");
      paragraph = [];
      sections.heading(heading);
      continue;
    }
    if (!/\S/.test(line) || THEMATIC_BREAK.test(line)) {
      flush();
      continue;
    }
    paragraph.push(line);
  }
  flush();
  return { format: "markdown", sections: sections.finish() };
}

/** A closing fence: the same character, at least as many, and nothing after it. */
function closesFence(line: string, fence: string): boolean {
  const mark = FENCE.exec(line)?.[1];
  return mark !== undefined && mark[0] === fence[0] && mark.length >= fence.length && line.trim() === mark;
}

function withoutClosingHashes(heading: string): string {
  if (/^#+$/.test(heading)) return "";
  return heading.replace(/[ \t]+#+$/, "");
}

/** The first line after YAML front matter (`---` on the first line up to the next `---` or `...`). */
function frontMatterEnd(lines: string[]): number {
  if (lines[0]?.trimEnd() !== "---") return 0;
  for (let i = 1; i < Math.min(lines.length, 200); i++) {
    const line = lines[i]?.trimEnd();
    if (line === "---" || line === "...") return i + 1;
  }
  return 0;
}
