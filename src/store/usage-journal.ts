import { closeSync, fstatSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs";
import type { UsageRecordRow } from "./repositories/usage-writes.ts";

/**
 * Where usage records become durable before their answer ends, so that the database write can
 * come after it. Appending must survive a crash of this process (`kill -9`) once it returns.
 */
export interface UsageJournal {
  /** Records an earlier process made durable here; some may not be in the database yet. */
  readonly leftOver: UsageRecordRow[];
  /** Makes rows durable; throws when it cannot (the caller then writes them to the database first). */
  append(rows: UsageRecordRow[]): void;
  /** Every appended row is in the database now: the journal may start again empty (`now`: it must). */
  written(now?: boolean): void;
  close(): void;
}

// Emptying the file is a system call and a file-system transaction: done once this much has
// gathered, not after every batch. Rows written already are replayed harmlessly (same request id).
const CLEAR_FROM_BYTES = 64 * 1024;

/**
 * An append-only file of JSON lines (embedded mode, in the data folder). A write(2) that returned is
 * in the operating system's cache, which a crash of the process does not lose; the usage database
 * (PGlite) gives the same guarantee, as it does not sync its files either.
 */
export class FileUsageJournal implements UsageJournal {
  readonly leftOver: UsageRecordRow[];
  private readonly fd: number;
  private size: number;

  constructor(path: string) {
    this.leftOver = readRows(path);
    this.fd = openSync(path, "a");
    this.size = fstatSync(this.fd).size;
  }

  append(rows: UsageRecordRow[]): void {
    let text = "";
    for (const row of rows) text += `${JSON.stringify(row)}\n`;
    const bytes = Buffer.from(text);
    let done = 0;
    while (done < bytes.length) done += writeSync(this.fd, bytes, done);
    this.size += bytes.length;
  }

  written(now = false): void {
    if (this.size === 0 || (!now && this.size < CLEAR_FROM_BYTES)) return;
    ftruncateSync(this.fd, 0);
    this.size = 0;
  }

  close(): void {
    closeSync(this.fd);
  }
}

const REPLAY_BATCH = 500;

/**
 * Writes the records an earlier process journaled (it may have stopped before writing them to the
 * database), then empties the journal; at open, before anything reads usage. A record written
 * already changes nothing (same request id).
 */
export async function replayJournal(
  journal: UsageJournal,
  repo: { record(rows: UsageRecordRow[]): Promise<unknown> },
): Promise<number> {
  const rows = journal.leftOver;
  for (let at = 0; at < rows.length; at += REPLAY_BATCH) await repo.record(rows.slice(at, at + REPLAY_BATCH));
  if (rows.length > 0) journal.written(true);
  return rows.length;
}

/**
 * For a database in memory (tests): nothing outlives the process anyway, so the rows are only held
 * until the database has them (a test can see that an ended answer's record is held somewhere).
 */
export class MemoryUsageJournal implements UsageJournal {
  readonly leftOver: UsageRecordRow[] = [];
  /** Rows appended and not yet known to be in the database. */
  readonly held: UsageRecordRow[] = [];
  append(rows: UsageRecordRow[]): void {
    this.held.push(...rows);
  }
  written(): void {
    this.held.length = 0;
  }
  close(): void {}
}

/**
 * The rows of a journal file. A line cut short by a crash belongs to a record whose append never
 * returned, so whose answer never ended: it is skipped.
 */
function readRows(path: string): UsageRecordRow[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const rows: UsageRecordRow[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    try {
      rows.push(JSON.parse(line) as UsageRecordRow);
    } catch {
      // the torn last line of a crash
    }
  }
  return rows;
}
