import { open, readFile } from "node:fs/promises";
import { DocumentUnreadable, readDocument } from "../documents/read-document.ts";
import { writePassages } from "./passage-file.ts";
import type { ReadAnswer, ReadRequest } from "./reader-messages.ts";

/**
 * The process that reads one uploaded document (document-reader.ts starts it): it is given a file,
 * writes the document's passages to another file and answers with the document's facts or the
 * reason it cannot be read. Whatever the document does to it (memory, time, a crash) stays here:
 * the service only sees the process end. It never prints: the content is the user's.
 */
async function read(request: ReadRequest): Promise<ReadAnswer> {
  const bytes = await readFile(request.path);
  try {
    const read = await readDocument(bytes, request.filename, { limits: request.limits });
    const file = await open(request.passagesPath, "w");
    try {
      const passages = await writePassages(file, read.passages);
      return {
        ok: true,
        format: read.format,
        ...(read.pages === undefined ? {} : { pages: read.pages }),
        passages,
      };
    } finally {
      await file.close();
    }
  } catch (error) {
    if (error instanceof DocumentUnreadable)
      return { ok: false, problem: error.problem, reason: error.reason };
    throw error;
  }
}

process.once("message", (request: ReadRequest) => {
  read(request).then(
    (answer) => process.send?.(answer, () => process.exit(0)),
    () => process.exit(70),
  );
});
