import { copyFile, mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { isRowId } from "../ids.ts";
import type { DocumentFiles } from "./document-files.ts";

/**
 * Uploaded files in a folder of the embedded installation (one process owns its data folder, so
 * it is the only reader): storing costs a rename or a file copy, where the embedded database would take about
 * a second a megabyte and keep the memory. Files of documents stored in the database before
 * (`older`) are still read from there.
 */
export class DiskDocumentFiles implements DocumentFiles {
  private readonly folder: string;
  private readonly older: DocumentFiles | undefined;
  private made: Promise<unknown> | undefined;

  constructor(folder: string, older?: DocumentFiles) {
    this.folder = folder;
    this.older = older;
  }

  /** Moves the file in when it is on the same file system (no second write of it), else copies it. */
  async store(documentId: string, path: string): Promise<void> {
    this.made ??= mkdir(this.folder, { recursive: true, mode: 0o700 });
    await this.made;
    try {
      await rename(path, this.pathOf(documentId));
    } catch (error) {
      if ((error as { code?: unknown }).code !== "EXDEV") throw error;
      await copyFile(path, this.pathOf(documentId));
    }
  }

  async copyTo(documentId: string, path: string): Promise<boolean> {
    try {
      await copyFile(this.pathOf(documentId), path);
      return true;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "ENOENT") throw error;
      return this.older ? this.older.copyTo(documentId, path) : false;
    }
  }

  async drop(documentId: string): Promise<void> {
    await rm(this.pathOf(documentId), { force: true });
    await this.older?.drop(documentId);
  }

  async sweep(stillWanted: (documentId: string) => Promise<boolean>): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.folder);
    } catch {
      return 0;
    }
    let dropped = 0;
    for (const name of names) {
      if (isRowId(name) && (await stillWanted(name))) continue;
      await rm(join(this.folder, name), { force: true });
      dropped += 1;
    }
    return dropped;
  }

  private pathOf(documentId: string): string {
    if (!isRowId(documentId)) throw new Error("not a document id");
    return join(this.folder, documentId);
  }
}
