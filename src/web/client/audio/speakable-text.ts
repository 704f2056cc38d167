import { Lexer, type Token, type Tokens } from "marked";

/** The longest `text` of `POST /audio/synthesize`, in characters (code points). */
export const SPEECH_MAX_CHARACTERS = 5000;

// A sentence ends at . ! ? … (or their full-width forms) followed by a space or the end.
const SENTENCE_END = /[.!?…。！？]["'»”’)\]]*(?=\s|$)/gu;
const ENDS_LIKE_SENTENCE = /[.!?…:;。！？]["'»”’)\]]*$/u;
// Emoji and the joiners and selectors that build them: a voice reads their names, or noise.
const EMOJI =
  /\p{Extended_Pictographic}|\p{Emoji_Modifier}|[\u{1F1E6}-\u{1F1FF}\u{E0020}-\u{E007F}]|\u{FE0F}|\u{200D}|\u{20E3}/gu;

const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
};

/**
 * An answer's Markdown as text a voice can read: code blocks, pictures, bare links, HTML tags,
 * emphasis marks and emoji left out; headings, list items and table rows each made a sentence; cut
 * at a sentence boundary to fit `max` characters.
 */
export function speakableText(markdown: string, max = SPEECH_MAX_CHARACTERS): string {
  let blocks: string[];
  try {
    blocks = blockTexts(Lexer.lex(markdown));
  } catch {
    blocks = [markdown];
  }
  const text = blocks
    .map((block) => tidy(block))
    .filter((block) => block !== "")
    .join("\n");
  return fitted(text, max);
}

function blockTexts(tokens: Token[]): string[] {
  const out: string[] = [];
  for (const token of tokens) {
    switch (token.type) {
      case "code":
      case "space":
      case "hr":
      case "def":
        break;
      case "heading":
        out.push(sentence(inline((token as Tokens.Heading).tokens)));
        break;
      case "paragraph":
        out.push(inline((token as Tokens.Paragraph).tokens));
        break;
      case "blockquote":
        out.push(...blockTexts((token as Tokens.Blockquote).tokens));
        break;
      case "list":
        for (const item of (token as Tokens.List).items) {
          out.push(sentence(blockTexts(item.tokens).join(" ")));
        }
        break;
      case "table": {
        const table = token as Tokens.Table;
        for (const row of [table.header, ...table.rows]) {
          out.push(sentence(row.map((cell) => inline(cell.tokens)).join(", ")));
        }
        break;
      }
      case "html":
        out.push(withoutTags((token as Tokens.HTML).text));
        break;
      case "text": {
        const text = token as Tokens.Text;
        out.push(text.tokens ? inline(text.tokens) : decode(text.text));
        break;
      }
      default:
        if ("tokens" in token && Array.isArray(token.tokens)) out.push(...blockTexts(token.tokens));
        else if ("text" in token && typeof token.text === "string") out.push(decode(token.text));
    }
  }
  return out;
}

function inline(tokens: Token[] | undefined): string {
  if (!tokens) return "";
  return tokens
    .map((token) => {
      switch (token.type) {
        case "image":
        case "checkbox":
          return "";
        case "br":
          return " ";
        case "codespan":
          return decode((token as Tokens.Codespan).text);
        case "html":
          return withoutTags((token as Tokens.Tag).text);
        case "link": {
          const link = token as Tokens.Link;
          const words = inline(link.tokens);
          // A bare address (an autolink) says nothing worth hearing.
          return words.trim() === link.href || /^(https?:|mailto:|www\.)/i.test(words.trim()) ? "" : words;
        }
        default:
          if ("tokens" in token && Array.isArray(token.tokens)) return inline(token.tokens);
          return "text" in token && typeof token.text === "string" ? decode(token.text) : "";
      }
    })
    .join("");
}

function sentence(text: string): string {
  const trimmed = tidy(text);
  return trimmed === "" || ENDS_LIKE_SENTENCE.test(trimmed) ? trimmed : `${trimmed}.`;
}

function withoutTags(html: string): string {
  return decode(html.replace(/<[^>]*>/g, " "));
}

function decode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code =
        name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

function tidy(text: string): string {
  return text
    .replace(EMOJI, "")
    .replace(/[*_~`#|]+/g, " ")
    .replace(/[ \t\u00a0]+/g, " ")
    .replace(/ *\n */g, "\n")
    .replace(/ ([.,;:!?])/g, "$1")
    .trim();
}

/** The text itself when it fits; otherwise its longest start under `max` that ends a sentence. */
function fitted(text: string, max: number): string {
  const points = [...text];
  if (points.length <= max) return text;
  const head = points.slice(0, max).join("");
  // One character more, so a stop right at the limit is seen with what follows it.
  const probe = points.slice(0, max + 1).join("");
  let cut = -1;
  for (const match of probe.matchAll(SENTENCE_END)) {
    const end = match.index + match[0].length;
    if (end <= head.length) cut = end;
  }
  if (cut > head.length / 2) return head.slice(0, cut).trim();
  // No sentence ends late enough: stop after the last whole word.
  const space = head.search(/\s\S*$/);
  return (space > 0 ? head.slice(0, space) : head).trim();
}
