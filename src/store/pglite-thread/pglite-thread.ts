import { once } from "node:events";
import { setTimeout as delay } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import {
  errorFrom,
  type ThreadAnswer,
  type ThreadCall,
  type ThreadOptions,
  type ThreadReady,
} from "./thread-messages.ts";

/** How long a closed thread may take to end by itself before it is terminated. */
const CLOSE_EXIT_MS = 5_000;

/** A statement's result as PGlite gives it (what Drizzle's PGlite driver reads). */
export interface QueryResult {
  rows: unknown[];
  fields: Array<{ name: string; dataTypeID: number }>;
  affectedRows?: number;
}

/** What Drizzle passes with a query: the row shape and the types to keep as text. */
interface QueryOptions {
  rowMode?: "array" | "object";
  parsers?: Record<string, unknown>;
}

/** The statements of one open transaction (Drizzle's PGlite driver calls these on it). */
export interface ThreadTransaction {
  query(text: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult>;
  exec(text: string): Promise<QueryResult[]>;
}

type Call = ThreadCall extends infer C ? (C extends { id: number } ? Omit<C, "id"> : never) : never;

// PostgreSQL's "admin shutdown": a database that went away is unavailable (503), not a bug (500).
const GONE = { code: "57P01" };
const WORKER_URL = new URL("./pglite-worker.ts", import.meta.url);

/**
 * Embedded PostgreSQL (PGlite) in its own thread, with the client interface Drizzle's PGlite driver
 * uses (query, exec, transaction). The request thread only posts statements and reads answers: a
 * write's work in WebAssembly no longer holds requests, and once closed, the thread's memory (the
 * WebAssembly heap, which never shrinks while it lives) is given back to the system.
 */
export class PgliteThread implements ThreadTransaction {
  private readonly worker: Worker;
  private readonly waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  private nextId = 1;
  private exited = false;

  private constructor(worker: Worker) {
    this.worker = worker;
    worker.on("message", (answer: ThreadAnswer) => {
      const call = this.waiting.get(answer.id);
      if (!call) return;
      this.waiting.delete(answer.id);
      if (answer.ok) call.resolve(answer.result);
      else call.reject(errorFrom(answer.error));
    });
    worker.on("exit", () => {
      this.exited = true;
      for (const call of this.waiting.values()) call.reject(gone());
      this.waiting.clear();
    });
  }

  /** Starts the thread and opens the database in it; rejects with PGlite's own error when it cannot. */
  static async start(options: ThreadOptions): Promise<PgliteThread> {
    const worker = new Worker(WORKER_URL, {
      workerData: options,
      // The young generation only holds results in passing; a small one keeps the thread's heap small.
      resourceLimits: { maxYoungGenerationSizeMb: 8 },
    });
    let settle: { failed: (error: unknown) => void; exited: (code: number) => void } | undefined;
    const ready = await new Promise<ThreadReady>((resolve, reject) => {
      settle = {
        failed: reject,
        exited: (code) => reject(new Error(`the PGlite thread exited (${code}) before it was ready`)),
      };
      worker.once("message", resolve);
      worker.once("error", settle.failed);
      worker.once("exit", settle.exited);
    }).finally(() => {
      if (!settle) return;
      worker.off("error", settle.failed);
      worker.off("exit", settle.exited);
    });
    if (!ready.ready) {
      await worker.terminate();
      throw errorFrom(ready.error);
    }
    // An error the thread did not catch ends it; its calls then fail as a database that went away.
    worker.on("error", () => {});
    return new PgliteThread(worker);
  }

  query(text: string, params: unknown[] = [], options: QueryOptions = {}): Promise<QueryResult> {
    return this.queryIn(undefined, text, params, options);
  }

  exec(text: string): Promise<QueryResult[]> {
    return this.execIn(undefined, text);
  }

  /** A statement alone, by name: parsed and planned on its first run only (its text must not change). */
  named(name: string, text: string, params: unknown[]): Promise<{ rows: unknown[] }> {
    return this.call({ op: "named", name, text, params }) as Promise<{ rows: unknown[] }>;
  }

  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  async transaction<T>(fn: (tx: ThreadTransaction) => Promise<T>): Promise<T> {
    const tx = (await this.call({ op: "begin" })) as number;
    const inside: ThreadTransaction = {
      query: (text, params = [], options = {}) => this.queryIn(tx, text, params, options),
      exec: (text) => this.execIn(tx, text),
    };
    let result: T;
    try {
      result = await fn(inside);
    } catch (error) {
      await this.call({ op: "end", tx, commit: false }).catch(() => {});
      throw error;
    }
    await this.call({ op: "end", tx, commit: true });
    return result;
  }

  /** The whole database as PGlite's data folder archive (uncompressed tar): a template for `ThreadOptions`. */
  dump(): Promise<Uint8Array> {
    return this.call({ op: "dump" }) as Promise<Uint8Array>;
  }

  /** Closes the database (its files are consistent on disk) and ends the thread. */
  async close(): Promise<void> {
    if (this.exited) return;
    try {
      await this.call({ op: "close" });
      // The thread ends by itself after a close; terminate it only if it does not.
      if (!this.exited)
        await Promise.race([once(this.worker, "exit"), delay(CLOSE_EXIT_MS, undefined, { ref: false })]);
    } finally {
      if (!this.exited) await this.worker.terminate();
    }
  }

  /** A statement alone (`tx` undefined) or in the open transaction `tx`. */
  private queryIn(
    tx: number | undefined,
    text: string,
    params: unknown[],
    options: QueryOptions,
  ): Promise<QueryResult> {
    const rowMode = options.rowMode ?? "object";
    const rawTypes = rawTypesOf(options.parsers);
    const call: Call =
      tx === undefined
        ? { op: "query", text, params, rowMode, rawTypes }
        : { op: "query", text, params, rowMode, rawTypes, tx };
    return this.call(call) as Promise<QueryResult>;
  }

  private execIn(tx: number | undefined, text: string): Promise<QueryResult[]> {
    return this.call(tx === undefined ? { op: "exec", text } : { op: "exec", text, tx }) as Promise<
      QueryResult[]
    >;
  }

  private call(call: Call): Promise<unknown> {
    if (this.exited) return Promise.reject(gone());
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...call, id });
    });
  }
}

// Drizzle passes the same parser objects with every query: their type lists are worked out once.
const rawTypeLists = new WeakMap<object, number[]>();
const NO_TYPES: number[] = [];

/** The types whose parsers are given: the thread keeps them as PostgreSQL's text. */
function rawTypesOf(parsers: Record<string, unknown> | undefined): number[] {
  if (parsers === undefined) return NO_TYPES;
  let types = rawTypeLists.get(parsers);
  if (!types) {
    types = Object.keys(parsers).map(Number);
    rawTypeLists.set(parsers, types);
  }
  return types;
}

function gone(): Error {
  return Object.assign(new Error("the embedded database (PGlite thread) has stopped"), GONE);
}
