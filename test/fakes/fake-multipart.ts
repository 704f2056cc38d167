import type { IncomingMessage } from "node:http";
import busboy from "busboy";

/** A file of a multipart upload, as a fake logs it. */
export interface FakeUploadedFile {
  field: string;
  filename: string;
  mimeType: string;
  /** Bytes received. */
  size: number;
  /** The first 16 bytes (enough to tell the format). */
  head: Buffer;
}

/** A multipart/form-data body, as a fake logs it: the text fields in order (names may repeat) and the files. */
export interface FakeMultipart {
  fields: Array<[name: string, value: string]>;
  files: FakeUploadedFile[];
}

/** Whether a logged body is a multipart upload. */
export function isMultipart(body: unknown): body is FakeMultipart {
  return typeof body === "object" && body !== null && "files" in body && "fields" in body;
}

/** The values of a text field of an upload (empty when it is absent). */
export function formValues(body: FakeMultipart, name: string): string[] {
  return body.fields.filter(([field]) => field === name).map(([, value]) => value);
}

/** Reads a multipart request with busboy; files are counted and their start kept, not stored. */
export function readMultipart(req: IncomingMessage): Promise<FakeMultipart> {
  return new Promise((resolve, reject) => {
    const parsed: FakeMultipart = { fields: [], files: [] };
    const parser = busboy({ headers: req.headers });
    parser.on("field", (name, value) => parsed.fields.push([name, value]));
    parser.on("file", (field, stream, info) => {
      const file: FakeUploadedFile = {
        field,
        filename: info.filename ?? "",
        mimeType: info.mimeType,
        size: 0,
        head: Buffer.alloc(0),
      };
      parsed.files.push(file);
      stream.on("data", (chunk: Buffer) => {
        if (file.head.length < 16) file.head = Buffer.concat([file.head, chunk]).subarray(0, 16);
        file.size += chunk.length;
      });
    });
    parser.on("close", () => resolve(parsed));
    parser.on("error", reject);
    req.pipe(parser);
  });
}
