/**
 * Cuts a byte stream into text lines as the bytes arrive. Chunk boundaries may fall anywhere,
 * also inside a multi-byte UTF-8 character: the streaming decoder keeps the partial bytes until
 * the rest comes. Lines end at "\n"; a "\r" before it is dropped (CRLF). Invalid UTF-8 becomes
 * U+FFFD rather than failing the stream.
 */
export class LineSplitter {
  private readonly decoder = new TextDecoder("utf-8");
  private pending = "";

  /** The lines completed by this chunk. */
  push(chunk: Uint8Array): string[] {
    const text = this.decoder.decode(chunk, { stream: true });
    if (text.length === 0) return [];
    const lines: string[] = [];
    // Only the new text can hold a newline: earlier text was already searched.
    let newline = text.indexOf("\n");
    if (newline === -1) {
      this.pending += text;
      return lines;
    }
    let buffer = this.pending + text;
    let start = 0;
    newline += this.pending.length;
    while (newline !== -1) {
      lines.push(trimCr(buffer.slice(start, newline)));
      start = newline + 1;
      newline = buffer.indexOf("\n", start);
    }
    buffer = buffer.slice(start);
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

function trimCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}
