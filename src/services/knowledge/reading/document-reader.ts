import { type ChildProcess, fork } from "node:child_process";
import { readFile } from "node:fs/promises";
import { setPriority } from "node:os";
import { fileURLToPath } from "node:url";
import { Slots } from "../../../slots.ts";
import { type DocumentLimits, documentLimits } from "../documents/document-limits.ts";
import { DocumentUnreadable } from "../documents/document-unreadable.ts";
import type { DocumentFormat } from "../documents/extracted-document.ts";
import type { ReadAnswer, ReadRequest } from "./reader-messages.ts";

const SCRIPT = fileURLToPath(new URL("./reader-process.ts", import.meta.url));
/** How often the reading process's memory is looked at. */
const WATCH_EVERY_MS = 50;
const PAGE_BYTES = 4096;
const MB = 1024 * 1024;
/** The reading process's niceness: well below the service, above nothing else of Zona's. */
const READER_NICENESS = 10;

/** How documents are read: the caps of one reading and how many run at once. */
export interface DocumentReaderOptions {
  /** Most memory (resident) one reading process may take; it is stopped above it. */
  memoryMb: number;
  /** Longest one reading may take; it is stopped then. */
  timeoutMs: number;
  /** Readings running at the same time in this process; the others wait their turn. */
  concurrency: number;
  /** Lower caps than the defaults (tests). */
  limits?: Partial<DocumentLimits>;
}

/** What a document read into a passage file is. */
export interface DocumentFacts {
  format: DocumentFormat;
  pages?: number;
  passages: number;
}

type Ending = "answered" | "memory" | "time" | "aborted";

/**
 * Reads uploaded documents away from the service: each in a process of its own, with a heap cap, a
 * resident-memory watch and a wall-time cap, at most `concurrency` at once. A document that passes
 * a cap, or crashes its reader, is DocumentUnreadable with a reason for the user; the next document
 * gets a fresh process. Nothing of the reading ever runs on the service's own threads.
 */
export class DocumentReader {
  private readonly options: DocumentReaderOptions;
  private readonly limits: DocumentLimits;
  private readonly slots: Slots;

  constructor(options: DocumentReaderOptions) {
    this.options = options;
    this.limits = documentLimits(options.limits);
    this.slots = new Slots(options.concurrency);
  }

  /**
   * Reads the file at `path` and writes its passages to `passagesPath` (passage-file.ts). Waits for
   * a free slot first. Rejects with DocumentUnreadable when the document cannot be read, or with
   * the signal's reason when aborted (the reading is stopped; nothing is decided about the file).
   */
  async read(
    file: { path: string; filename: string; passagesPath: string },
    signal?: AbortSignal,
  ): Promise<DocumentFacts> {
    const release = await this.slots.take(signal);
    try {
      signal?.throwIfAborted();
      return await this.readInProcess({ ...file, limits: this.limits }, signal);
    } finally {
      release();
    }
  }

  private readInProcess(request: ReadRequest, signal: AbortSignal | undefined): Promise<DocumentFacts> {
    const { memoryMb, timeoutMs } = this.options;
    // The heap gets what the process's own code and buffers leave of the cap.
    const heapMb = Math.max(32, Math.floor(memoryMb * 0.75));
    const child = fork(SCRIPT, [], {
      execArgv: [`--max-old-space-size=${heapMb}`, "--max-semi-space-size=4"],
      stdio: ["ignore", "ignore", "ignore", "ipc"],
      serialization: "advanced",
    });
    lowerPriority(child);
    let ending: Ending | undefined;
    let answer: ReadAnswer | undefined;
    const stop = (why: Ending) => {
      ending ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => stop("time"), timeoutMs);
    const watch = setInterval(() => {
      if (child.pid === undefined) return;
      residentBytes(child.pid).then((bytes) => {
        if (bytes !== undefined && bytes > memoryMb * MB) stop("memory");
      });
    }, WATCH_EVERY_MS);
    const onAbort = () => stop("aborted");
    signal?.addEventListener("abort", onAbort, { once: true });
    child.on("message", (message: ReadAnswer) => {
      answer = message;
      ending ??= "answered";
    });
    child.send(request);
    return new Promise<DocumentFacts>((resolve, reject) => {
      let settled = false;
      const settle = () => {
        settled = true;
        clearTimeout(timer);
        clearInterval(watch);
        signal?.removeEventListener("abort", onAbort);
      };
      child.once("exit", (code, exitSignal) => {
        if (settled) return;
        settle();
        if (ending === "aborted") return reject(signal?.reason ?? new Error("the reading was stopped"));
        if (answer?.ok) {
          const { ok: _ok, ...facts } = answer;
          return resolve(facts);
        }
        if (answer) return reject(new DocumentUnreadable(answer.problem, answer.reason));
        // V8 ends a process whose heap is full with SIGABRT (or exit code 134 through a shell).
        const outOfMemory = ending === "memory" || exitSignal === "SIGABRT" || code === 134;
        reject(this.unreadable(outOfMemory ? "memory" : ending === "time" ? "time" : "crash"));
      });
      child.once("error", (error) => {
        // The process could not be started: the service's own trouble, not the document's.
        if (settled) return;
        settle();
        reject(error);
      });
    });
  }

  private unreadable(why: "memory" | "time" | "crash"): DocumentUnreadable {
    switch (why) {
      case "memory":
        return new DocumentUnreadable(
          "too_demanding",
          `Reading the document needed more than ${this.options.memoryMb} MB of memory, the most Zona gives one document. Split it into smaller files, or save it again in a simpler form, and upload those.`,
        );
      case "time":
        return new DocumentUnreadable(
          "too_demanding",
          `Reading the document took longer than ${Math.round(this.options.timeoutMs / 1000)} seconds, the most Zona gives one document. Split it into smaller files, or save it again in a simpler form, and upload those.`,
        );
      case "crash":
        return new DocumentUnreadable(
          "corrupt",
          "The document could not be read: its reader stopped on it. Save or export it again and upload the new file.",
        );
    }
  }
}

/**
 * Reading yields the processor to the service: on a machine whose cores are all busy, requests of
 * other users go first and the reading takes the time left.
 */
function lowerPriority(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    setPriority(child.pid, READER_NICENESS);
  } catch {
    // Not allowed here (some containers): the reading runs at the service's priority.
  }
}

/** The resident memory of a process (Linux), or undefined where it cannot be read. */
async function residentBytes(pid: number): Promise<number | undefined> {
  try {
    const statm = await readFile(`/proc/${pid}/statm`, "latin1");
    const pages = Number(statm.split(" ")[1]);
    return Number.isFinite(pages) ? pages * PAGE_BYTES : undefined;
  } catch {
    return undefined;
  }
}
