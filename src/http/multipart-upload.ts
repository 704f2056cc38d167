import { randomBytes } from "node:crypto";
import { createWriteStream, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import busboy from "busboy";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { payloadTooLarge } from "../errors/catalogue.ts";
import { uploadFailed } from "../errors/media-errors.ts";
import { BODY_LIMIT_BYTES } from "./body-parsers.ts";
import { namelessFileParts } from "./nameless-file-parts.ts";
import { refuseUnstorableFields } from "./unstorable-text-guard.ts";

/** Hard limits of one multipart upload. */
export interface UploadLimits {
  /** The form field that carries the file; other file parts are read and thrown away. */
  fileField: string;
  /** Bytes of the file kept; a longer file is marked `truncated` and the rest discarded. */
  maxFileBytes: number;
  /** Text fields at most, and bytes per text field (longer ones are marked too long). */
  maxFields?: number;
  maxFieldBytes?: number;
}

/** The file of an upload, written to a temporary folder. */
export interface ReceivedFile {
  path: string;
  /** Bytes written (at most `maxFileBytes`). */
  size: number;
  /** The name the client gave (only shown upstream, never trusted). */
  filename: string;
  /** The file was longer than `maxFileBytes`: never process it. */
  truncated: boolean;
}

/** What a multipart form held. `remove()` deletes the temporary file; call it in every case. */
export interface MultipartUpload {
  /** The text fields; none holds a character that cannot be stored (NUL, a lone surrogate). */
  fields: Map<string, string[]>;
  /** Text fields longer than `maxFieldBytes` (their value is cut). */
  tooLong: Set<string>;
  /** The file part with content or a name; an empty part without a name is a form sent with no file chosen. */
  file: ReceivedFile | undefined;
  /** Names of file parts other than `fileField` (read and thrown away), for routes that refuse them. */
  otherFiles: string[];
  remove(): Promise<void>;
}

/** Whether a request's body is a multipart form. */
export function isMultipart(request: FastifyRequest): boolean {
  const type = request.headers["content-type"];
  return typeof type === "string" && /^multipart\/form-data\s*;/i.test(type);
}

/**
 * Reads a multipart form from the request stream with hard limits: the whole request at most 64 MB
 * (413 above, from Content-Length before reading or counted while reading), one file written to the
 * app's upload folder (uploadFolderOf), a bounded number of small text fields. A malformed or cut-off
 * form is 400 `upload_failed`; a text field that cannot be stored is refused like any request string
 * (unstorable-text-guard.ts). The file is removed when reading fails; otherwise by `remove()`.
 */
export async function receiveMultipart(
  request: FastifyRequest,
  limits: UploadLimits,
): Promise<MultipartUpload> {
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > BODY_LIMIT_BYTES) throw payloadTooLarge();
  const path = join(await folderOf(request.server.server), `upload-${randomBytes(12).toString("hex")}`);
  const remove = () => rm(path, { force: true });
  try {
    const received = await readForm(request, limits, path);
    refuseUnstorableFields(request, received.fields);
    return { ...received, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

// One folder per HTTP server (so per app), made on its first upload and removed when it closes: what
// one app leaves behind is told apart from the files of every other program using the temporary folder.
const folders = new WeakMap<Server, { made: Promise<string>; path?: string }>();

function folderOf(server: Server): Promise<string> {
  const known = folders.get(server);
  if (known) return known.made;
  const entry: { made: Promise<string>; path?: string } = {
    made: mkdtemp(join(tmpdir(), "zona-uploads-")).then(
      (path) => {
        entry.path = path;
        return path;
      },
      (error: unknown) => {
        folders.delete(server); // the next upload tries again
        throw error;
      },
    ),
  };
  folders.set(server, entry);
  server.once("close", () => {
    folders.delete(server);
    // Synchronous, so that the folder is gone when the app's close resolves.
    if (entry.path !== undefined) rmSync(entry.path, { recursive: true, force: true });
    else void entry.made.then((path) => rm(path, { recursive: true, force: true }));
  });
  return entry.made;
}

/** The folder where an app's uploads are written while they are read, once it has had one. */
export function uploadFolderOf(app: FastifyInstance): string | undefined {
  return folders.get(app.server)?.path;
}

function readForm(
  request: FastifyRequest,
  limits: UploadLimits,
  path: string,
): Promise<Omit<MultipartUpload, "remove">> {
  const maxFieldBytes = limits.maxFieldBytes ?? 64 * 1024;
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: request.headers,
        limits: {
          fileSize: limits.maxFileBytes,
          files: 4,
          fields: limits.maxFields ?? 64,
          fieldSize: maxFieldBytes,
          parts: (limits.maxFields ?? 64) + 4,
        },
      });
    } catch {
      reject(uploadFailed());
      return;
    }
    const rewrite = namelessFileParts(request.headers["content-type"]);
    const fields = new Map<string, string[]>();
    const tooLong = new Set<string>();
    let file: ReceivedFile | undefined;
    const otherFiles: string[] = [];
    const writes: Promise<void>[] = [];
    const parts: Readable[] = [];
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      request.raw.unpipe(rewrite ?? parser);
      rewrite?.unpipe(parser);
      // Keep reading (and dropping) what the client still sends, so that it gets the answer.
      request.raw.resume();
      // A form cut off mid-file never ends its file part, which kept the file open for ever (its
      // descriptor and its disk space, though removed). Ended, the file closes; it is removed after.
      // With an error: a part destroyed without one, once its last byte has arrived but before it was
      // all read, counts as finished, and the file it was piped to would never be closed.
      for (const part of parts) part.destroy(new Error("the upload was abandoned"));
      void Promise.allSettled(writes).then(() => reject(error));
    };

    let bytes = 0;
    request.raw.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > BODY_LIMIT_BYTES) fail(payloadTooLarge());
    });
    request.raw.once("aborted", () => fail(uploadFailed()));

    parser.on("field", (name, value, info) => {
      if (info.valueTruncated) tooLong.add(name);
      const list = fields.get(name) ?? [];
      list.push(value);
      fields.set(name, list);
    });
    parser.on("file", (name, stream, info) => {
      parts.push(stream);
      // A part cut off is destroyed with an error ("Unexpected end of file"); one that is only
      // drained has no other listener, and an unhandled error would end the process.
      stream.on("error", () => {});
      if (settled || name !== limits.fileField || file !== undefined) {
        if (name !== limits.fileField) otherFiles.push(name);
        stream.resume();
        return;
      }
      const received: ReceivedFile = { path, size: 0, filename: info.filename ?? "", truncated: false };
      file = received;
      stream.on("data", (chunk: Buffer) => {
        received.size += chunk.length;
      });
      stream.once("limit", () => {
        received.truncated = true;
      });
      writes.push(pipeline(stream, createWriteStream(path)));
    });
    // `on`, not `once`: busboy goes on parsing after a malformed part header and may emit a second
    // error, which unhandled would end the process (multipart-fuzz).
    parser.on("error", () => fail(uploadFailed()));
    parser.once("close", () => {
      Promise.all(writes).then(
        () => {
          if (settled) return;
          settled = true;
          const chosen = file && (file.size > 0 || file.filename !== "") ? file : undefined;
          resolve({ fields, tooLong, file: chosen, otherFiles });
        },
        () => fail(uploadFailed()),
      );
    });
    (rewrite ? request.raw.pipe(rewrite) : request.raw).pipe(parser);
  });
}
