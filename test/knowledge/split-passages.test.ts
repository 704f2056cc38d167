import { describe, expect, it } from "vitest";
import type { ExtractedSection } from "../../src/services/knowledge/documents/extracted-document.ts";
import {
  normaliseWhitespace,
  type Passage,
  splitPassages,
} from "../../src/services/knowledge/documents/split-passages.ts";

const SENTENCES = [
  "The harbour wall was built of granite blocks brought by barge from the quarry upriver.",
  "Fishing boats leave before dawn and come back when the tide turns in the afternoon.",
  "Gulls follow them all the way in, hoping for scraps thrown from the deck.",
  "In winter the storms are strong enough to throw spray over the lighthouse at the end of the pier.",
  "The old customs house now holds a small museum about smuggling along the coast.",
  "Children catch crabs from the steps with bacon tied to a line.",
];

/** Prose of about `chars` characters in paragraphs of four sentences. */
function prose(chars: number, offset = 0): string[] {
  const paragraphs: string[] = [];
  let sentences: string[] = [];
  let length = 0;
  for (let i = offset; length < chars; i++) {
    const sentence = (SENTENCES[i % SENTENCES.length] ?? "").replace(/\.$/, ` (${i}).`);
    sentences.push(sentence);
    length += sentence.length + 1;
    if (sentences.length === 4) {
      paragraphs.push(sentences.join(" "));
      sentences = [];
    }
  }
  if (sentences.length > 0) paragraphs.push(sentences.join(" "));
  return paragraphs;
}

function section(paragraphs: string[], heading?: string, page?: number): ExtractedSection {
  return {
    ...(heading === undefined ? {} : { heading }),
    blocks: paragraphs.map((text) => (page === undefined ? { text } : { text, page })),
  };
}

/** The longest end of `before` that `after` starts with ("" when none). */
function overlap(before: string, after: string): string {
  for (let length = Math.min(before.length, after.length); length > 0; length--) {
    if (after.startsWith(before.slice(before.length - length))) return after.slice(0, length);
  }
  return "";
}

const words = (text: string) => text.split(/\s+/).filter(Boolean);
const graphemes = (text: string) =>
  [...new Intl.Segmenter("und", { granularity: "grapheme" }).segment(text)].map((s) => s.segment);
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe("documents are split into passages of about 1,000 characters", () => {
  const long = section(prose(6000));
  const text = long.blocks.map((block) => block.text).join(" ");

  const rules: Array<[string, () => void]> = [
    [
      "passages are at most the target (1,000 by default) and at least half of it, but for the last",
      () => {
        const passages = splitPassages([long]);
        expect(passages.length).toBeGreaterThanOrEqual(6);
        for (const passage of passages) expect(passage.text.length).toBeLessThanOrEqual(1000);
        for (const passage of passages.slice(0, -1)) expect(passage.text.length).toBeGreaterThanOrEqual(500);
      },
    ],
    [
      "the target is configurable",
      () => {
        const passages = splitPassages([long], { targetChars: 300, overlapChars: 50 });
        for (const passage of passages) expect(passage.text.length).toBeLessThanOrEqual(300);
        for (const passage of passages.slice(0, -1)) expect(passage.text.length).toBeGreaterThanOrEqual(150);
      },
    ],
    [
      "consecutive passages overlap by whole words, up to 150 characters by default",
      () => {
        const passages = splitPassages([long]);
        for (let i = 1; i < passages.length; i++) {
          const before = passages[i - 1]?.text ?? "";
          const shared = overlap(before, passages[i]?.text ?? "");
          expect(shared.length).toBeGreaterThanOrEqual(50);
          expect(shared.length).toBeLessThanOrEqual(150);
          // The repeated part starts with a whole word.
          expect(before[before.length - shared.length - 1]).toMatch(/\s/);
        }
      },
    ],
    [
      "the overlap is configurable, and 0 turns it off",
      () => {
        const passages = splitPassages([long], { overlapChars: 0 });
        const joined = passages.map((passage) => passage.text).join(" ");
        expect(words(joined)).toEqual(words(text));
        const wide = splitPassages([long], { overlapChars: 400 });
        for (let i = 1; i < wide.length; i++) {
          const shared = overlap(wide[i - 1]?.text ?? "", wide[i]?.text ?? "").length;
          expect(shared).toBeGreaterThanOrEqual(134);
          expect(shared).toBeLessThanOrEqual(400);
        }
      },
    ],
    [
      "passages cut at a paragraph break when one falls in the second half of the window",
      () => {
        const paragraphs = ["A short opening paragraph.", "x ".repeat(300).trim(), "y ".repeat(300).trim()];
        const [first] = splitPassages([section(paragraphs)], { targetChars: 1000, overlapChars: 0 });
        expect(first?.text).toBe(`${paragraphs[0]}\n\n${paragraphs[1]}`);
      },
    ],
    [
      "else at a sentence end",
      () => {
        const passages = splitPassages([section([prose(3000).join(" ")])], { overlapChars: 0 });
        expect(passages.length).toBeGreaterThan(3);
        for (const passage of passages)
          expect(passage.text).toMatch(/^(The|Fishing|Gulls|In|Children) .* \(\d+\)\.$/s);
      },
    ],
    [
      "else between words: never in the middle of a word",
      () => {
        const source = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
        const passages = splitPassages([section([source])], { targetChars: 100, overlapChars: 20 });
        const known = new Set(words(source));
        for (const passage of passages) for (const word of words(passage.text)) expect(known).toContain(word);
        expect(passages.at(-1)?.text.endsWith("word399")).toBe(true);
      },
    ],
    [
      "a word longer than the target is the only thing cut inside, into target-sized pieces",
      () => {
        const word = "a".repeat(2500);
        const passages = splitPassages([section([`before ${word} after`])], {
          targetChars: 1000,
          overlapChars: 100,
        });
        expect(passages.map((passage) => passage.text)).toEqual([
          "before",
          "a".repeat(1000),
          "a".repeat(1000),
          `${"a".repeat(500)} after`,
        ]);
      },
    ],
    [
      "no passage crosses a heading; each carries its section's heading",
      () => {
        const sections = [
          section(prose(1500), "Harbour"),
          section(prose(1500, 3), "Harbour"),
          section(prose(400), "Pier"),
        ];
        const passages = splitPassages(sections);
        // Split together as split one by one: nothing runs on, nothing overlaps, from one section to the next.
        expect(passages).toEqual(sections.flatMap((one) => splitPassages([one])));
        expect(passages.map((passage) => passage.heading)).toEqual([
          ...splitPassages([sections[0] as ExtractedSection]).map(() => "Harbour"),
          ...splitPassages([sections[1] as ExtractedSection]).map(() => "Harbour"),
          "Pier",
        ]);
        sections.forEach((one, i) => {
          const own = one.blocks.map((block) => block.text).join("\n\n");
          for (const passage of splitPassages([one])) expect(own, `section ${i}`).toContain(passage.text);
        });
      },
    ],
    [
      "text before any heading has no heading",
      () => {
        const passages = splitPassages([section(["Preface."]), section(["Body."], "Chapter 1")]);
        expect(passages).toEqual<Passage[]>([{ text: "Preface." }, { text: "Body.", heading: "Chapter 1" }]);
      },
    ],
    [
      "each passage carries the page where it starts",
      () => {
        const page = (name: string, number: number) => ({
          text: Array.from({ length: 120 }, (_, i) => `${name}${i}`).join(" "),
          page: number,
        });
        const sections: ExtractedSection[] = [{ blocks: [page("alpha", 1), page("beta", 2)] }];
        for (const overlapChars of [0, 150]) {
          const passages = splitPassages(sections, { targetChars: 400, overlapChars });
          for (const passage of passages) expect(passage.page).toBe(passage.text.startsWith("alpha") ? 1 : 2);
          expect(passages[0]?.page).toBe(1);
          expect(passages.at(-1)?.page).toBe(2);
        }
      },
    ],
    [
      "Unicode is kept intact: emoji, flags, accents (decomposed ones composed) and scripts without spaces",
      () => {
        const family = "👨‍👩‍👧";
        const source = `${"Crème brûlée 🇨🇭 ".repeat(30)}${family.repeat(120)} Cafe\u0301 東京は日本の首都です。${"東京".repeat(200)}`;
        const passages = splitPassages([section([source])], { targetChars: 97, overlapChars: 20 });
        const known = new Set(graphemes(source.normalize("NFC")));
        for (const passage of passages) {
          expect(passage.text).not.toMatch(LONE_SURROGATE);
          for (const grapheme of graphemes(passage.text)) expect(known).toContain(grapheme);
        }
        expect(passages.map((passage) => passage.text).join("")).toContain("Café");
        expect(passages.some((passage) => passage.text.includes(family))).toBe(true);
      },
    ],
    [
      "CRLF and lone CR line ends become LF; blank lines inside a paragraph collapse",
      () => {
        const passages = splitPassages([section(["one\r\ntwo\rthree\r\n\r\n\r\nfour"])]);
        expect(passages.map((passage) => passage.text)).toEqual(["one\ntwo\nthree\nfour"]);
      },
    ],
    [
      "whitespace is normalised: tabs, runs of spaces, no-break and zero-width spaces",
      () => {
        expect(normaliseWhitespace("  a\t\tb \u00a0 c\u200bd  \n   e  ")).toBe("a b cd\ne");
        const passages = splitPassages([section(["  lots\t of \u3000 space  ", "", " \n "])]);
        expect(passages.map((passage) => passage.text)).toEqual(["lots of space"]);
      },
    ],
    [
      "empty passages are dropped: blank paragraphs and sections give nothing",
      () => {
        expect(
          splitPassages([section(["", "  ", "\r\n\t"]), { blocks: [] }, section([" "], "Empty")]),
        ).toEqual([]);
      },
    ],
    [
      "an overlap not smaller than the target is refused",
      () => {
        expect(() => splitPassages([long], { targetChars: 100, overlapChars: 100 })).toThrow(RangeError);
        expect(() => splitPassages([long], { targetChars: 0 })).toThrow(RangeError);
      },
    ],
  ];

  it.each(rules)("%s", (_title, check) => check());
});
