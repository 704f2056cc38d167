/**
 * Where the uploaded file of a document waits until it is read: on the embedded installation's
 * disk, or in the database where several instances share the work. Files go in and out through
 * files on disk, never whole in memory.
 */
export interface DocumentFiles {
  /** Keeps the file at `path` as the document's (it may be moved away; the caller removes what is left). */
  store(documentId: string, path: string): Promise<void>;
  /** Writes the document's file to `path`; false when it has none (read already, or lost). */
  copyTo(documentId: string, path: string): Promise<boolean>;
  /** Drops the document's file (read, failed or deleted). */
  drop(documentId: string): Promise<void>;
  /** Drops the files of documents for which `stillWanted` says no (their base was deleted). */
  sweep?(stillWanted: (documentId: string) => Promise<boolean>): Promise<number>;
}
