import { Worker } from "node:worker_threads";
import { quotingEngine } from "../engine-words.ts";
import { abortError } from "../http/upstream-errors.ts";
import { UpstreamError, type VoiceName } from "../types.ts";
import type { EspeakReply, EspeakRequest } from "./espeak-protocol.ts";

/** The espeak-ng voice (language + variant) standing in for each own voice. */
export const ESPEAK_VOICES: Readonly<Record<VoiceName, string>> = {
  paola: "it+f3",
  riccardo: "it+m3",
  amy: "en-us+f3",
  ryan: "en-us+m3",
  thorsten: "de+m3",
  siwis: "fr+f3",
};

/** How the engine is set up. */
export interface EspeakEngineOptions {
  /** Longest one synthesis may run before the worker is killed and restarted (default 60 s). */
  timeoutMs?: number;
}

interface Job {
  id: number;
  text: string;
  voice: string;
  resolve(wav: Buffer): void;
  reject(error: Error): void;
  /** Detaches the job from its signal. */
  release(): void;
}

const WORKER_URL = new URL("./espeak-worker.ts", import.meta.url);

/**
 * The built-in speech engine: espeak-ng compiled to WASM, run in one worker thread so that a
 * synthesis never blocks the event loop. The worker is started on the first request, runs one
 * request at a time (the others wait in order), is restarted when it dies or overruns, and never
 * keeps the process alive while idle. Failures are UpstreamErrors like an engine server's: a
 * synthesis that fails is a `status` 500, one that overruns a `timeout`, a cancelled one `aborted`.
 */
export class EspeakEngine {
  private readonly timeoutMs: number;
  private readonly queue: Job[] = [];
  private worker: Worker | undefined;
  private current: Job | undefined;
  private timer: NodeJS.Timeout | undefined;
  private serial = 0;

  constructor(options: EspeakEngineOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** Whether a worker thread is running (it is started by the first request). */
  get started(): boolean {
    return this.worker !== undefined;
  }

  /** Reads `text` aloud with an espeak-ng voice (e.g. "it+f3"); resolves with a 16-bit PCM WAV file. */
  synthesize(text: string, voice: string, signal?: AbortSignal): Promise<Buffer> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<Buffer>((resolve, reject) => {
      // A waiting request leaves the queue; a running one is left to finish (a fraction of a
      // second) with its result dropped, so the worker still does one thing at a time.
      const onAbort = () => {
        if (signal === undefined) return;
        const queued = this.queue.indexOf(job);
        if (queued !== -1) this.queue.splice(queued, 1);
        job.reject(abortError(signal));
      };
      const job: Job = {
        id: ++this.serial,
        text,
        voice,
        resolve: (wav) => {
          job.release();
          resolve(wav);
        },
        reject: (error) => {
          job.release();
          reject(error);
        },
        release: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.queue.push(job);
      this.pump();
    });
  }

  /** Stops the worker and fails the waiting requests; a later request starts a new worker. */
  async close(): Promise<void> {
    const jobs = [...(this.current ? [this.current] : []), ...this.queue];
    this.queue.length = 0;
    this.current = undefined;
    this.clearTimer();
    const worker = this.worker;
    this.worker = undefined;
    for (const job of jobs) job.reject(new UpstreamError("aborted", "the built-in speech engine was closed"));
    if (worker) await worker.terminate();
  }

  /** Sends the next request to the worker when it is free. */
  private pump(): void {
    if (this.current !== undefined) return;
    const job = this.queue.shift();
    if (job === undefined) {
      this.worker?.unref();
      return;
    }
    this.current = job;
    const worker = this.ensureWorker();
    // Referenced while working, so a script awaiting a synthesis is not ended under it.
    worker.ref();
    this.clearTimer();
    this.timer = setTimeout(() => {
      this.restart(new UpstreamError("timeout", "the built-in speech engine took too long"));
    }, this.timeoutMs);
    this.timer.unref();
    const request: EspeakRequest = { id: job.id, text: job.text, voice: job.voice };
    worker.postMessage(request);
  }

  private ensureWorker(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(WORKER_URL, { name: "espeak-ng" });
    worker.unref();
    worker.on("message", (reply: EspeakReply) => {
      if (worker !== this.worker) return;
      this.settle(reply);
    });
    worker.on("error", (error) => {
      if (worker !== this.worker) return;
      this.restart(
        quotingEngine("status", "the built-in speech engine failed", error.message, { status: 500 }),
      );
    });
    worker.on("exit", (code) => {
      if (worker !== this.worker) return;
      this.restart(
        new UpstreamError("status", `the built-in speech engine stopped (exit code ${code})`, 500),
      );
    });
    this.worker = worker;
    return worker;
  }

  /** Ends the running request with the worker's answer (a no-op for one cancelled meanwhile). */
  private settle(reply: EspeakReply): void {
    const job = this.current;
    if (job === undefined || job.id !== reply.id) return;
    this.current = undefined;
    this.clearTimer();
    if ("wav" in reply)
      job.resolve(Buffer.from(reply.wav.buffer, reply.wav.byteOffset, reply.wav.byteLength));
    else
      job.reject(quotingEngine("status", "the built-in speech engine failed", reply.error, { status: 500 }));
    this.pump();
  }

  /** Kills the worker (dead or stuck), fails the running request, and goes on with the next on a new one. */
  private restart(error: UpstreamError): void {
    const worker = this.worker;
    this.worker = undefined;
    this.clearTimer();
    void worker?.terminate();
    const job = this.current;
    this.current = undefined;
    job?.reject(error);
    this.pump();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

let shared: EspeakEngine | undefined;

/** The process-wide engine, created on first use (its worker only on the first synthesis). */
export function sharedEspeakEngine(): EspeakEngine {
  shared ??= new EspeakEngine();
  return shared;
}
