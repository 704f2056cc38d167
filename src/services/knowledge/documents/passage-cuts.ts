const words = new Intl.Segmenter("und", { granularity: "word" });
const graphemes = new Intl.Segmenter("und", { granularity: "grapheme" });

/** Characters that may follow a sentence's final mark before the space: closing quotes and brackets. */
const CLOSERS = new Set(['"', "'", "\u2019", "\u201d", "\u00bb", ")", "]"]);
const SENTENCE_MARKS = new Set([".", "!", "?", "\u2026"]);
/** Chinese and Japanese end sentences without a space after the mark. */
const WIDE_SENTENCE_MARKS = new Set(["\u3002", "\uff01", "\uff1f"]);

/**
 * Where the passage starting at `start` ends (exclusive): at most `target` characters on, and past
 * `minEnd`. Prefers, in order: a paragraph break, a sentence end, a line break, each in the
 * second half of the window (so passages are not needlessly short); then the last space; then a
 * word boundary as Unicode finds it (scripts written without spaces); then, inside a word longer
 * than the target only, a character boundary that keeps emoji and accented letters whole.
 */
export function passageEnd(text: string, start: number, minEnd: number, target: number): number {
  const hi = start + target;
  if (hi >= text.length) return text.length;
  const lo = Math.max(start + Math.floor(target / 2), minEnd);
  // Scans stay inside the window: lastIndexOf would run back to the start of a long text.
  const paragraph = lastBetween(lo, hi, (at) => text[at] === "\n" && text[at + 1] === "\n");
  if (paragraph !== undefined) return paragraph;
  const sentence = lastBetween(lo, hi, (at) => isSentenceEnd(text, at));
  if (sentence !== undefined) return sentence;
  const line = lastBetween(lo, hi, (at) => text[at] === "\n");
  if (line !== undefined) return line;
  const space = lastBetween(minEnd, hi, (at) => isSpace(text, at));
  if (space !== undefined) return space;
  return (
    lastBoundary(words, text, start, minEnd, hi) ??
    lastBoundary(graphemes, text, start, minEnd, hi) ??
    codePointEnd(text, hi)
  );
}

/**
 * Where the passage after one ending at `end` starts, so that it repeats about `overlap`
 * characters of it in whole words: at the first sentence that starts in the overlap (if that still
 * repeats a third of it), else at the first word. After `end` when no word starts there (no
 * overlap asked, or one long word).
 */
export function nextStart(text: string, start: number, end: number, overlap: number): number {
  if (overlap > 0) {
    const from = Math.max(end - overlap, start + 1);
    const sentence = firstBetween(from, end - Math.ceil(overlap / 3), (at) => isSentenceStart(text, at));
    if (sentence !== undefined) return sentence;
    const word = firstBetween(from, end - 1, (at) => isWordStart(text, at));
    if (word !== undefined) return word;
  }
  let at = end;
  while (at < text.length && isSpace(text, at)) at++;
  return at;
}

function isWordStart(text: string, at: number): boolean {
  return !isSpace(text, at) && isSpace(text, at - 1);
}

/** A word starting a line, or following a sentence's end. */
function isSentenceStart(text: string, at: number): boolean {
  return isWordStart(text, at) && (text[at - 1] === "\n" || isSentenceEnd(text, at - 1));
}

function isSpace(text: string, at: number): boolean {
  const char = text[at];
  return char === " " || char === "\n";
}

/** A cut before the space after a sentence mark (or right after a wide one). */
function isSentenceEnd(text: string, at: number): boolean {
  if (WIDE_SENTENCE_MARKS.has(text[at - 1] ?? "")) return true;
  if (!isSpace(text, at)) return false;
  let mark = at - 1;
  while (mark > 0 && CLOSERS.has(text[mark] ?? "")) mark--;
  return SENTENCE_MARKS.has(text[mark] ?? "");
}

function firstBetween(lo: number, hi: number, test: (at: number) => boolean): number | undefined {
  for (let at = lo; at <= hi; at++) if (test(at)) return at;
  return undefined;
}

function lastBetween(lo: number, hi: number, test: (at: number) => boolean): number | undefined {
  for (let at = hi; at >= lo; at--) if (test(at)) return at;
  return undefined;
}

/** The last segment boundary in (minEnd .. hi], looking one character past hi to see a boundary there. */
function lastBoundary(
  segmenter: Intl.Segmenter,
  text: string,
  start: number,
  minEnd: number,
  hi: number,
): number | undefined {
  let found: number | undefined;
  for (const { index } of segmenter.segment(text.slice(start, hi + 1))) {
    const at = start + index;
    if (at > hi) break;
    if (at >= minEnd) found = at;
  }
  return found;
}

/** A last resort for a single character longer than the window: never split a surrogate pair. */
function codePointEnd(text: string, hi: number): number {
  const code = text.charCodeAt(hi);
  return code >= 0xdc00 && code <= 0xdfff ? hi - 1 : hi;
}
