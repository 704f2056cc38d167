import { UpstreamError } from "../types.ts";

/**
 * The longest line (and SSE event) read from a stream, in characters. Real chunks are a few hundred
 * bytes; even a whole tool call or Ollama's final `context` stays far below it.
 */
export const MAX_LINE_CHARACTERS = 8 * 1024 * 1024;

/**
 * Cuts a byte stream into text lines as the bytes arrive. Chunk boundaries may fall anywhere,
 * also inside a multi-byte UTF-8 character: the streaming decoder keeps the partial bytes until
 * the rest comes. Lines end at "\n"; a "\r" before it is dropped (CRLF). Invalid UTF-8 becomes
 * U+FFFD rather than failing the stream. A line longer than `maxLine` characters is a `protocol`
 * failure: an upstream that never sends a newline must not fill the memory.
 */
export class LineSplitter {
  private readonly decoder = new TextDecoder("utf-8");
  private readonly maxLine: number;
  private pending = "";

  constructor(maxLine = MAX_LINE_CHARACTERS) {
    this.maxLine = maxLine;
  }

  /** The lines completed by this chunk. */
  push(chunk: Uint8Array): string[] {
    const text = this.decoder.decode(chunk, { stream: true });
    if (text.length === 0) return [];
    const lines: string[] = [];
    // Only the new text can hold a newline: earlier text was already searched.
    let newline = text.indexOf("\n");
    if (newline === -1) {
      this.pending += text;
      if (this.pending.length > this.maxLine) throw tooLong(this.maxLine);
      return lines;
    }
    let buffer = this.pending + text;
    let start = 0;
    newline += this.pending.length;
    while (newline !== -1) {
      if (newline - start > this.maxLine) throw tooLong(this.maxLine);
      lines.push(trimCr(buffer.slice(start, newline)));
      start = newline + 1;
      newline = buffer.indexOf("\n", start);
    }
    buffer = buffer.slice(start);
    if (buffer.length > this.maxLine) throw tooLong(this.maxLine);
    this.pending = buffer;
    return lines;
  }

  /** The last line, when the stream ended without a final newline. */
  end(): string[] {
    const rest = this.pending + this.decoder.decode();
    this.pending = "";
    return rest.length > 0 ? [trimCr(rest)] : [];
  }
}

function tooLong(maxLine: number): UpstreamError {
  return new UpstreamError("protocol", `the upstream sent a line longer than ${maxLine} characters`);
}

function trimCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}
