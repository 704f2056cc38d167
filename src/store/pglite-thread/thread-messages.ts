// What the request thread and the PGlite thread say to each other. Only structured-clonable data
// crosses: functions (PGlite's custom parsers) cannot, so a query names the types it wants as
// PostgreSQL sent them (Drizzle's parsers are all the identity) and the thread builds the parsers.
import { describeThrown } from "./thrown-value.ts";

/** How the PGlite thread opens its database. */
export interface ThreadOptions {
  /** PGlite's data folder; undefined keeps the database in memory. */
  dataDir: string | undefined;
  sharedBuffers: string;
  /** A database in memory starts as a copy of this one (a `dump` of another), not from an empty cluster. */
  template?: Uint8Array;
}

/** One call of the request thread; `tx` names an open transaction, else the statement runs alone. */
export type ThreadCall =
  | {
      id: number;
      op: "query";
      text: string;
      params: unknown[];
      rowMode: "array" | "object";
      rawTypes: number[];
      tx?: number;
    }
  | { id: number; op: "exec"; text: string; tx?: number }
  | { id: number; op: "named"; name: string; text: string; params: unknown[] }
  | { id: number; op: "begin" }
  | { id: number; op: "end"; tx: number; commit: boolean }
  | { id: number; op: "dump" }
  | { id: number; op: "close" };

/** The answer to a call: its result, or the failure as data. */
export type ThreadAnswer =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: ErrorData };

/** A failure that crossed threads: the message, and PostgreSQL's fields (code, detail, ...). */
export interface ErrorData {
  name: string;
  message: string;
  fields: Record<string, string | number | boolean>;
}

/** The first message of the PGlite thread: the database is open, or why it could not be. */
export type ThreadReady = { ready: true } | { ready: false; error: ErrorData };

/** An error as data: its own fields of simple values (PostgreSQL's code, detail, constraint...). */
export function errorData(error: unknown, folder?: string): ErrorData {
  if (!(error instanceof Error)) return { name: "Error", message: describeThrown(error, folder), fields: {} };
  const fields: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
      fields[key] = value;
  }
  return { name: error.name, message: error.message, fields };
}

/** The error again, on this side: same name, message and fields, this thread's stack. */
export function errorFrom(data: ErrorData): Error {
  const error = new Error(data.message);
  error.name = data.name;
  return Object.assign(error, data.fields);
}
