import type { SectionBuilder } from "./section-builder.ts";

const TOKEN = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)([^>]*)>|([^<]+)/g;
const HEADING = /^h[1-6]$/;
/** Tags that start or end a paragraph of their own. */
const BLOCK = new Set([
  "p",
  "li",
  "ul",
  "ol",
  "table",
  "tr",
  "td",
  "th",
  "caption",
  "blockquote",
  "pre",
  "div",
  "dl",
  "dt",
  "dd",
]);
/** The "↑" links mammoth adds after each footnote, endnote and comment, back to where it was cited. */
const BACK_LINK = /href="#(?:footnote|endnote|comment)-ref-/;

/**
 * Reads the HTML mammoth makes from a Word document into sections: h1 to h6 (Word's Heading 1 to
 * Heading 6, and Title) start sections, every other block element is a paragraph. mammoth's HTML
 * is simple and well-formed (no scripts, no comments, only escaped text), so a tokenizer is enough.
 */
export function addDocxHtml(html: string, sections: SectionBuilder): void {
  let text = "";
  let skipping = false;
  for (const match of html.matchAll(TOKEN)) {
    const [, closing, rawTag, attributes, content] = match;
    if (content !== undefined) {
      if (!skipping) text += decodeEntities(content);
      continue;
    }
    const tag = (rawTag ?? "").toLowerCase();
    if (tag === "a") {
      if (!closing && BACK_LINK.test(attributes ?? "")) skipping = true;
      else if (closing) skipping = false;
    } else if (tag === "br") {
      text += "\n";
    } else if (HEADING.test(tag)) {
      if (closing) sections.heading(text);
      else sections.paragraph(text);
      text = "";
    } else if (BLOCK.has(tag)) {
      sections.paragraph(text);
      text = "";
    }
  }
  sections.paragraph(text);
}

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (entity, body: string) => {
    if (body[0] !== "#") return NAMED[body.toLowerCase()] ?? entity;
    const code =
      body[1] === "x" || body[1] === "X" ? Number.parseInt(body.slice(2), 16) : Number(body.slice(1));
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
  });
}
