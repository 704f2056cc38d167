import type { Database } from "../database.ts";
import { eq, lte } from "../drizzle.ts";
import { imageFiles } from "../schema.ts";

/** A kept picture. */
export interface KeptImage {
  id: string;
  png: Buffer;
  expiresAt: Date;
}

/** Pictures answered as links, kept in the database so that every instance serves them. */
export class ImageFilesRepository {
  private readonly db: Database;
  constructor(db: Database) {
    this.db = db;
  }

  /** Keeps a picture until `expiresAt`; returns its id. */
  async add(png: Buffer, expiresAt: Date): Promise<string> {
    const rows = await this.db.insert(imageFiles).values({ png, expiresAt }).returning({ id: imageFiles.id });
    const row = rows[0];
    if (!row) throw new Error("the picture could not be stored");
    return row.id;
  }

  /** The picture of an id, expired or not; undefined when there is none. */
  async find(id: string): Promise<KeptImage | undefined> {
    const rows = await this.db
      .select({ id: imageFiles.id, png: imageFiles.png, expiresAt: imageFiles.expiresAt })
      .from(imageFiles)
      .where(eq(imageFiles.id, id));
    return rows[0];
  }

  /** Deletes every picture whose expiry is `now` or earlier; returns how many. */
  async deleteExpired(now: Date): Promise<number> {
    const rows = await this.db
      .delete(imageFiles)
      .where(lte(imageFiles.expiresAt, now))
      .returning({ id: imageFiles.id });
    return rows.length;
  }
}
