/** The text of a plain-text file, or why its bytes are not text. */
export type DecodedText = { ok: true; text: string } | { ok: false; why: "not_utf8" | "binary" };

/** Above this share of control characters the bytes are some binary format, not text. */
const MAX_CONTROL_SHARE = 0.01;

/**
 * Decodes a text file: UTF-8 (with or without a byte-order mark), or UTF-16 when it starts with a
 * byte-order mark (Windows' "Unicode" text). Other encodings are not guessed: a wrong guess would
 * store garbled passages without anyone noticing. Text with a NUL byte, or more than 1 % of
 * control characters other than tab, line feed, vertical tab, form feed and carriage return, is
 * taken for a binary file.
 */
export function decodeText(bytes: Uint8Array): DecodedText {
  let text: string;
  try {
    text = new TextDecoder(encodingOf(bytes), { fatal: true }).decode(bytes);
  } catch {
    return { ok: false, why: hasNul(bytes) ? "binary" : "not_utf8" };
  }
  return looksBinary(text) ? { ok: false, why: "binary" } : { ok: true, text };
}

function encodingOf(bytes: Uint8Array): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le";
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be";
  // TextDecoder drops a UTF-8 byte-order mark by itself.
  return "utf-8";
}

function hasNul(bytes: Uint8Array): boolean {
  return bytes.subarray(0, 65_536).includes(0);
}

function looksBinary(text: string): boolean {
  const allowed = Math.floor(text.length * MAX_CONTROL_SHARE);
  let controls = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0) return true;
    if ((code < 0x20 && (code < 0x09 || code > 0x0d)) || code === 0x7f) {
      controls += 1;
      if (controls > allowed) return true;
    }
  }
  return false;
}
