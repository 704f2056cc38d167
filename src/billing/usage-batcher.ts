import type { BillingRepository } from "../store/repositories/billing.ts";
import type { UsageRecordRow, WrittenRecord } from "../store/repositories/usage-writes.ts";
import type { UsageJournal } from "../store/usage-journal.ts";

const MAX_BATCH = 500;
// A batch this large costs PGlite little more per record than a larger one: no reason to wait longer.
const GATHER_ROWS = 200;
// Journaled records are written to the database this long after the first of them at the latest:
// one statement then carries many (PGlite's cost is mostly per statement), and a reader that
// cannot wait (usage, a reservation) has them written at once.
const GATHER_MS = 100;
// Past this many journaled records waiting for the database, new answers wait for their own write:
// when requests come faster than the database takes records, the instance slows to the pace of
// both (a throughput measured over seconds then includes the writes), and memory stays bounded.
const MAX_UNWRITTEN = 2_000;
// A database that refuses a batch is tried again after this long, then twice as long, up to the cap.
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5_000;

interface Waiting {
  row: UsageRecordRow;
  /** performance.now() when the record was made: its write lag is measured from here. */
  madeAt: number;
  resolve: (written?: WrittenRecord) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for usage records. An answer ends only once its record is durable (a crash must not
 * lose a delivered answer's record), so nothing waits on a timer: records are taken as soon as the
 * current round of I/O has queued them.
 *
 * With a journal (embedded mode) a record is durable once appended to it, a few microseconds; the
 * database write follows off the answer's path, and records that arrive while one runs go in the
 * next statement. Without one (PostgreSQL, shared by instances that come and go), the answer waits
 * for the database write itself. `written()` lets a reader see every record made before it.
 */
export class UsageBatcher {
  private readonly repo: BillingRepository;
  private readonly journal: UsageJournal | undefined;
  private readonly onBatch: ((size: number) => void) | undefined;
  private readonly onWritten: ((lagSeconds: number) => void) | undefined;
  private readonly onWriteFailed: ((error: unknown) => void) | undefined;
  /** Each record resolves with what its batch's write left of its key month and account. */
  private readonly totals: boolean;
  private incoming: Waiting[] = [];
  private scheduled = false;
  /** Rows acknowledged (journaled) and not yet in the database, oldest first. */
  private unwritten: Array<{ row: UsageRecordRow; seq: number; madeAt: number }> = [];
  private writing = false;
  /** The running write of journaled rows, while `writing` (with a journal). */
  private current: Promise<void> | undefined;
  /** A read that must see the database and the pending rows as one is running: nothing is written. */
  private reading = false;
  /** Rows the journal refused while a read ran: written to the database once it has. */
  private heldForRead: Waiting[] = [];
  private madeSeq = 0;
  private writtenSeq = 0;
  /** The newest unwritten record of each key that has one. */
  private readonly lastSeqOfKey = new Map<string, number>();
  private readers: Array<{ seq: number; resolve: () => void; reject: (error: unknown) => void }> = [];
  private retryMs = RETRY_FIRST_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private gatherTimer: NodeJS.Timeout | undefined;
  private stopping = false;

  /**
   * `onBatch` hears the size of every batch written (the batch-size metric); `onWritten` the time
   * each record took from being made until it was in the database (the write-lag metric: with a
   * journal, longer than its answer waited); `onWriteFailed` a batch the database refused after its
   * records were acknowledged (they stay journaled and are retried).
   */
  constructor(
    repo: BillingRepository,
    options: {
      journal?: UsageJournal;
      onBatch?: (size: number) => void;
      onWritten?: (lagSeconds: number) => void;
      onWriteFailed?: (error: unknown) => void;
      /** Without a journal: resolve each record with what its write left (Redis's copy follows it). */
      totals?: boolean;
    } = {},
  ) {
    this.totals = options.totals === true;
    this.repo = repo;
    this.journal = options.journal;
    this.onBatch = options.onBatch;
    this.onWritten = options.onWritten;
    this.onWriteFailed = options.onWriteFailed;
  }

  /**
   * Resolves once the row is durable (with what its write left, when asked for); rejects when it
   * cannot be made so (the answer is then a 503).
   */
  record(row: UsageRecordRow): Promise<WrittenRecord | undefined> {
    return new Promise((resolve, reject) => {
      this.incoming.push({ row, madeAt: performance.now(), resolve, reject });
      if (this.scheduled || (this.writing && this.journal === undefined)) return;
      this.scheduled = true;
      // setImmediate, not a microtask: records of answers finishing in this same round of I/O join.
      setImmediate(() => {
        this.scheduled = false;
        if (this.journal) this.journalIncoming(this.journal);
        else void this.writeIncoming();
      });
    });
  }

  /** Resolves when every record acknowledged before this call is in the database. */
  written(): Promise<void> {
    return this.writtenUpTo(this.madeSeq);
  }

  /**
   * Resolves when every acknowledged record of this key is in the database: what a reservation
   * waits for, so that the spend it checks is whole without waiting on other keys' records.
   */
  writtenFor(keyId: string | null): Promise<void> {
    return this.writtenUpTo((keyId === null ? undefined : this.lastSeqOfKey.get(keyId)) ?? 0);
  }

  private writtenUpTo(seq: number): Promise<void> {
    if (this.writtenSeq >= seq) return Promise.resolve();
    this.writeSoon(0);
    return new Promise((resolve, reject) => this.readers.push({ seq, resolve, reject }));
  }

  /**
   * Waits (at most `waitMs`) for the database writes of every acknowledged record (graceful
   * shutdown). What could not be written stays in the journal, for the next start to replay.
   */
  async flush(waitMs: number): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    this.writeSoon(0);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
      timer.unref();
    });
    const done = await Promise.race([
      this.written().then(
        () => true,
        () => false,
      ),
      late,
    ]);
    clearTimeout(timer);
    // Records journaled meanwhile (a request that ended during the wait) keep the journal as it is.
    if (done && this.unwritten.length === 0 && !this.writing) this.journal?.written(true);
  }

  private journalIncoming(journal: UsageJournal): void {
    const batch = this.incoming;
    this.incoming = [];
    try {
      journal.append(batch.map((entry) => entry.row));
    } catch {
      // A journal that cannot take them (a full disk): the database write itself makes them durable.
      if (this.reading) this.heldForRead.push(...batch);
      else void this.writeNow(batch);
      return;
    }
    for (const entry of batch) {
      const seq = ++this.madeSeq;
      this.unwritten.push({ row: entry.row, seq, madeAt: entry.madeAt });
      if (entry.row.keyId) this.lastSeqOfKey.set(entry.row.keyId, seq);
      if (this.unwritten.length <= MAX_UNWRITTEN) entry.resolve();
      // Journaled, so durable: a failed write resolves it too (the retry or the next start writes it).
      else this.readers.push({ seq, resolve: () => entry.resolve(), reject: () => entry.resolve() });
    }
    this.writeSoon(this.unwritten.length >= GATHER_ROWS ? 0 : GATHER_MS);
  }

  /** Starts the database write in `delayMs` (or sooner, if already planned); one runs at a time. */
  private writeSoon(delayMs: number): void {
    if (this.writing || this.retryTimer) return;
    if (this.gatherTimer) {
      if (delayMs > 0) return;
      clearTimeout(this.gatherTimer);
      this.gatherTimer = undefined;
    }
    if (delayMs === 0) {
      void this.writeUnwritten();
      return;
    }
    this.gatherTimer = setTimeout(() => {
      this.gatherTimer = undefined;
      void this.writeUnwritten();
    }, delayMs);
  }

  /** Without a journal: one statement at a time, each acknowledging its own records once written. */
  private async writeIncoming(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.incoming.length > 0) await this.writeNow(this.incoming.splice(0, MAX_BATCH));
    } finally {
      this.writing = false;
    }
  }

  private async writeNow(batch: Waiting[]): Promise<void> {
    try {
      const rows = batch.map((entry) => entry.row);
      const written = this.totals ? await this.repo.recordEach(rows) : await this.repo.record(rows);
      this.batchWritten(batch);
      for (let i = 0; i < batch.length; i++) batch[i]?.resolve(written?.[i]);
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    }
  }

  /** With a journal: writes acknowledged rows in order; a refused batch is retried later, in order. */
  private writeUnwritten(): Promise<void> {
    if (this.writing) return this.current ?? Promise.resolve();
    this.writing = true;
    this.current = this.writeAllUnwritten().finally(() => {
      this.writing = false;
      this.current = undefined;
    });
    return this.current;
  }

  private async writeAllUnwritten(): Promise<void> {
    while (this.unwritten.length > 0) {
      const batch = this.unwritten.slice(0, MAX_BATCH);
      try {
        await this.repo.record(batch.map((entry) => entry.row));
      } catch (error) {
        this.onWriteFailed?.(error);
        this.failReaders(error);
        if (this.stopping) return;
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          void this.writeUnwritten();
        }, this.retryMs);
        this.retryTimer.unref();
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
        return;
      }
      this.retryMs = RETRY_FIRST_MS;
      this.unwritten.splice(0, batch.length);
      this.batchWritten(batch);
      this.writtenSeq = batch[batch.length - 1]?.seq ?? this.writtenSeq;
      for (const { row } of batch) {
        const last = row.keyId ? this.lastSeqOfKey.get(row.keyId) : undefined;
        if (row.keyId && last !== undefined && last <= this.writtenSeq) this.lastSeqOfKey.delete(row.keyId);
      }
      this.wakeReaders();
    }
    this.journal?.written();
  }

  /**
   * Runs `read` (of what the database holds) while no record is written, and hands its result with
   * the records made but not yet in the database to `use`, in the same tick: the two together are
   * then exactly every record made so far. With a journal only.
   */
  async readBeside<T>(
    read: () => Promise<T>,
    use: (result: T, pending: UsageRecordRow[]) => void,
  ): Promise<void> {
    if (!this.journal) throw new Error("readBeside needs the usage journal");
    while (this.current) await this.current.catch(() => {});
    this.writing = true;
    this.reading = true;
    try {
      const result = await read();
      use(result, [
        ...this.unwritten.map((entry) => entry.row),
        ...this.incoming.map((entry) => entry.row),
        ...this.heldForRead.map((entry) => entry.row),
      ]);
    } finally {
      this.writing = false;
      this.reading = false;
      const held = this.heldForRead;
      this.heldForRead = [];
      if (held.length > 0) void this.writeNow(held);
      if (this.unwritten.length > 0) this.writeSoon(0);
    }
  }

  private batchWritten(batch: ReadonlyArray<{ madeAt: number }>): void {
    this.onBatch?.(batch.length);
    if (!this.onWritten) return;
    const now = performance.now();
    for (const { madeAt } of batch) this.onWritten((now - madeAt) / 1000);
  }

  private wakeReaders(): void {
    if (this.readers.length === 0) return;
    const waiting = this.readers;
    this.readers = [];
    for (const reader of waiting) {
      if (reader.seq <= this.writtenSeq) reader.resolve();
      else this.readers.push(reader);
    }
  }

  private failReaders(error: unknown): void {
    const waiting = this.readers;
    this.readers = [];
    for (const reader of waiting) reader.reject(error);
  }
}
