import { constants, inflateSync } from "node:zlib";

const STREAM = /stream\r?\n/g;
const END = Buffer.from("endstream", "latin1");

/**
 * How many bytes the zlib-compressed streams of a PDF (FlateDecode, the filter of nearly every
 * stream) unpack to, found by inflating each one, or undefined as soon as the total passes `max`.
 * The lengths a PDF declares can lie, and pdf.js would unpack a bomb whole; this keeps at most
 * `max` bytes of one stream in memory and stops at the first that passes. Damaged streams count as
 * what they give before the damage: pdf.js judges them later.
 */
export function pdfUnpackedSize(bytes: Buffer, max: number): number | undefined {
  const text = bytes.toString("latin1");
  let total = 0;
  STREAM.lastIndex = 0;
  for (let match = STREAM.exec(text); match; match = STREAM.exec(text)) {
    const start = match.index + match[0].length;
    // "endstream" also ends with "stream": skip it.
    if (match.index >= 3 && text.startsWith("end", match.index - 3)) continue;
    const end = bytes.indexOf(END, start);
    const data = bytes.subarray(start, end < 0 ? bytes.length : end);
    if (!looksLikeZlib(data)) continue;
    const size = inflatedSize(data, max - total);
    if (size === undefined) return undefined;
    total += size;
    if (end < 0) break;
    STREAM.lastIndex = end + END.length;
  }
  return total;
}

/** A zlib header: deflate with a window of at most 32 KB, and a valid check value. */
function looksLikeZlib(data: Buffer): boolean {
  if (data.length < 2) return false;
  const cmf = data[0] ?? 0;
  const flg = data[1] ?? 0;
  return (cmf & 0x0f) === 8 && cmf >> 4 <= 7 && ((cmf << 8) | flg) % 31 === 0;
}

function inflatedSize(data: Buffer, left: number): number | undefined {
  try {
    // A sync flush makes a stream cut short (or followed by junk) give what it has instead of failing.
    return inflateSync(data, { maxOutputLength: Math.max(1, left), finishFlush: constants.Z_SYNC_FLUSH })
      .length;
  } catch (error) {
    if ((error as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") return undefined;
    return 0;
  }
}
