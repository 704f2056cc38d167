import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { Slots } from "../../slots.ts";
import type { Database } from "../database.ts";
import type { DocumentFiles } from "../document-files/document-files.ts";
import { and, eq } from "../drizzle.ts";
import { kbDocumentParts } from "../schema.ts";

/** Size of one stored part of an uploaded file. */
export const PART_BYTES = 1024 * 1024;
/**
 * Parts written or read at once by this process, all files together: fifty uploads at once must not
 * take every connection of the pool (and a megabyte of buffers each) from other users' queries.
 */
const PARTS_AT_ONCE = 2;

/**
 * The uploaded files of documents not read yet, stored in the database in parts of a megabyte so
 * that every instance can read them: written from a file on disk and read back to one, a part per
 * statement, so that neither the service nor the database ever holds a whole file at once.
 */
export class KbDocumentFilesRepository implements DocumentFiles {
  private readonly db: Database;
  private readonly slots = new Slots(PARTS_AT_ONCE);

  constructor(db: Database) {
    this.db = db;
  }

  async store(documentId: string, path: string): Promise<void> {
    let ordinal = 0;
    for await (const chunk of createReadStream(path, { highWaterMark: PART_BYTES })) {
      const release = await this.slots.take();
      try {
        await this.db.insert(kbDocumentParts).values({ documentId, ordinal, bytes: chunk as Buffer });
      } finally {
        release();
      }
      ordinal += 1;
    }
  }

  async copyTo(documentId: string, path: string): Promise<boolean> {
    const file = await open(path, "w");
    try {
      for (let ordinal = 0; ; ordinal += 1) {
        const release = await this.slots.take();
        const rows = await this.db
          .select({ bytes: kbDocumentParts.bytes })
          .from(kbDocumentParts)
          .where(and(eq(kbDocumentParts.documentId, documentId), eq(kbDocumentParts.ordinal, ordinal)))
          .finally(release);
        const part = rows[0];
        if (!part) return ordinal > 0;
        await file.write(part.bytes);
      }
    } finally {
      await file.close();
    }
  }

  async drop(documentId: string): Promise<void> {
    await this.db.delete(kbDocumentParts).where(eq(kbDocumentParts.documentId, documentId));
  }
}
