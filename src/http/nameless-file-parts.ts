import { Transform, type TransformCallback } from "node:stream";

const LINE_END = Buffer.from("\r\n");
// busboy's own limit of a part's headers; longer ones it refuses, so they are passed on untouched.
const MAX_HEADER_BYTES = 16 * 1024;
const EMPTY_FILENAME = /(;[ \t]*filename[ \t]*=[ \t]*)""/gi;

/**
 * busboy reads a part with `filename=""` as a text field unless its type is
 * application/octet-stream, but browsers and curl send a file without a name that way with its own
 * type (`application/pdf`, `audio/wav`): its bytes became a string, and the file was "missing".
 * This stream, between the request and busboy, rewrites `filename=""` in part headers (never in
 * content) to `filename="."`, which busboy reads as a file and names "" (it keeps the last path
 * segment of a name, and "." is none). Undefined when the Content-Type names no boundary.
 */
export function namelessFileParts(contentType: string | undefined): Transform | undefined {
  // busboy takes the last `boundary` parameter when there are several.
  const matches = [...(contentType ?? "").matchAll(/;\s*boundary=(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/gi)];
  const last = matches.at(-1);
  const boundary = last?.[1]?.replace(/\\(.)/g, "$1") ?? last?.[2];
  return boundary ? new PartHeaderRewrite(boundary) : undefined;
}

class PartHeaderRewrite extends Transform {
  /** What starts a part: the boundary after a line break (the first one has none, as in busboy). */
  private readonly delimiter: Buffer;
  /** Bytes held back: a delimiter or a part's headers may go on in the next chunk. */
  private pending: Buffer = Buffer.from("\r\n");
  /** The line break assumed before the first delimiter, never passed on. */
  private unsent = 2;
  private inHeaders = false;
  /** The line after the delimiter (the rest of the boundary line) has been passed on. */
  private seenLine = false;

  constructor(boundary: string) {
    super();
    this.delimiter = Buffer.from(`\r\n--${boundary}`, "latin1");
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    let data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (;;) {
      // Headers go on line by line, so that busboy sees a malformed one as soon as it is complete.
      const end = data.indexOf(this.inHeaders ? LINE_END : this.delimiter);
      if (end < 0 && this.inHeaders && data.length > MAX_HEADER_BYTES) {
        this.inHeaders = false;
        continue;
      }
      if (end < 0) {
        const keep = this.inHeaders ? data.length : partialDelimiter(data, this.delimiter);
        this.pass(data.subarray(0, data.length - keep));
        this.pending = data.subarray(data.length - keep);
        break;
      }
      if (this.inHeaders) {
        const line = data.subarray(0, end + LINE_END.length);
        // The boundary line's own end, then each header; an empty line ends the headers.
        if (end === 0 && this.seenLine) this.inHeaders = false;
        this.seenLine = true;
        this.pass(Buffer.from(line.toString("latin1").replace(EMPTY_FILENAME, '$1"."'), "latin1"));
        data = data.subarray(line.length);
      } else {
        this.pass(data.subarray(0, end + this.delimiter.length));
        data = data.subarray(end + this.delimiter.length);
        this.inHeaders = true;
        this.seenLine = false;
      }
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    this.pass(this.pending);
    done();
  }

  private pass(bytes: Buffer): void {
    const skipped = Math.min(this.unsent, bytes.length);
    this.unsent -= skipped;
    if (bytes.length > skipped) this.push(bytes.subarray(skipped));
  }
}

/** How many bytes at the end of `data` could be the start of `delimiter` (held until the next chunk). */
function partialDelimiter(data: Buffer, delimiter: Buffer): number {
  for (let length = Math.min(data.length, delimiter.length - 1); length > 0; length--) {
    if (data.subarray(data.length - length).equals(delimiter.subarray(0, length))) return length;
  }
  return 0;
}
