import type { Store } from "../database.ts";
import { KbDocumentFilesRepository } from "../repositories/kb-document-files.ts";
import { DiskDocumentFiles } from "./disk-document-files.ts";
import type { DocumentFiles } from "./document-files.ts";

/** Where a store keeps uploaded files: its own folder when embedded, else the shared database. */
export function documentFilesOf(store: Store): DocumentFiles {
  const inDatabase = new KbDocumentFilesRepository(store.db);
  return store.filesDir === undefined ? inDatabase : new DiskDocumentFiles(store.filesDir, inDatabase);
}
