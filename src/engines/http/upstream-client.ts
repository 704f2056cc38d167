import { openAsBlob } from "node:fs";
import { type Dispatcher, FormData, Pool } from "undici";
import { type MachineConfig, UpstreamError } from "../types.ts";
import { parseJsonPayload } from "./sse.ts";
import { abortError, statusError, toUpstreamError } from "./upstream-errors.ts";
import { upstreamTarget } from "./upstream-target.ts";

/**
 * Timeouts of upstream calls, in milliseconds (headers and body timers tick every ~0.5 s, so they may
 * fire up to ~1 s late). `headersMs` also bounds a whole non-streamed answer and a stream's first
 * event, counted from the send: a body that trickles in keeps the silence timer quiet, not the request.
 */
export interface UpstreamTimeouts {
  /** Establishing the TCP (and TLS) connection. */
  connectMs: number;
  /** From sending the request to the answer's headers, and to the end of a whole answer or a stream's first event. */
  headersMs: number;
  /** Silence allowed between two pieces of an answer's body. */
  bodyMs: number;
}

/** The defaults: a dead machine is noticed in 2 s, a slow model gets a minute to start answering. */
export const DEFAULT_UPSTREAM_TIMEOUTS: UpstreamTimeouts = {
  connectMs: 2_000,
  headersMs: 60_000,
  bodyMs: 120_000,
};

/** How an UpstreamClient is set up. */
export interface UpstreamClientOptions extends Partial<UpstreamTimeouts> {
  /** How long an idle keep-alive connection is kept (below the usual 5 s of uvicorn servers). */
  keepAliveMs?: number;
}

/** One call to a machine: a JSON body is POSTed, no body means GET (unless `method` says DELETE). */
export interface UpstreamCall {
  machine: MachineConfig;
  /** Only for a bodiless DELETE; otherwise the method follows from the body. */
  method?: "DELETE";
  /** The full path on the machine's origin (see upstream-target.ts). */
  path: string;
  body?: unknown;
  signal: AbortSignal;
  /** Overrides of the client's timeouts for this call. */
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /**
   * Keep the JSON body of an error answer (up to ERROR_ANSWER_LIMIT bytes) on the UpstreamError as
   * `answer`: for a server that answers a state with an error status (vLLM-Omni's failed video job).
   */
  keepErrorAnswer?: boolean;
}

/** A file sent in a multipart upload, streamed from disk. */
export interface UploadFile {
  /** The form field that carries it. */
  field: string;
  path: string;
  /** The name the upstream sees. */
  filename: string;
  /** Its content type. */
  type: string;
}

/** One multipart/form-data POST to a machine: text fields and at most one file. */
export interface UpstreamUpload extends Omit<UpstreamCall, "body" | "method"> {
  /** Text fields in order; a name may repeat (`timestamp_granularities[]`). */
  fields: ReadonlyArray<readonly [name: string, value: string]>;
  /** Absent: a form of text fields only (vLLM-Omni's `/v1/videos` takes its parameters so). */
  file?: UploadFile;
}

/** A binary answer (audio), with the content type the upstream declared. */
export interface BinaryAnswer {
  body: Buffer;
  contentType: string | undefined;
}

/** The largest binary answer read (a runaway upstream must not fill the memory). */
export const BINARY_ANSWER_LIMIT = 64 * 1024 * 1024;

/** The largest JSON answer read: a batch of embeddings or a long answer with log-probabilities stays far below. */
export const JSON_ANSWER_LIMIT = 64 * 1024 * 1024;

const ERROR_BODY_LIMIT = 4_096;
/** The largest error answer kept for a call that asked for it: a video job record repeats its prompt. */
export const ERROR_ANSWER_LIMIT = 64 * 1024;
const ERROR_BODY_WAIT_MS = 2_000;

/**
 * The HTTP client of all adapters: a keep-alive connection pool per machine origin. Every failure
 * comes out as an UpstreamError (see upstream-errors.ts); a call resolves only for a 2xx answer.
 *
 * The pools are kept here rather than in an undici Agent: the Agent drops and closes an origin's
 * pool on disconnects, and after one refused or cut connection it stopped reusing connections for
 * that origin at all (nodejs/undici#5022). Origins come from the configuration, so the map is small.
 */
export class UpstreamClient {
  readonly timeouts: UpstreamTimeouts;
  private readonly poolOptions: Pool.Options;
  private readonly pools = new Map<string, Pool>();

  constructor(options: UpstreamClientOptions = {}) {
    this.timeouts = {
      connectMs: options.connectMs ?? DEFAULT_UPSTREAM_TIMEOUTS.connectMs,
      headersMs: options.headersMs ?? DEFAULT_UPSTREAM_TIMEOUTS.headersMs,
      bodyMs: options.bodyMs ?? DEFAULT_UPSTREAM_TIMEOUTS.bodyMs,
    };
    this.poolOptions = {
      connect: { timeout: this.timeouts.connectMs },
      keepAliveTimeout: options.keepAliveMs ?? 4_000,
      headersTimeout: this.timeouts.headersMs,
      bodyTimeout: this.timeouts.bodyMs,
    };
  }

  /** Sends the call and parses the whole answer as JSON (`protocol` failure when it is not JSON). */
  async json(call: UpstreamCall): Promise<unknown> {
    const started = performance.now();
    const response = await this.send(call, "application/json", jsonBody(call.body));
    return readJson(response, call.signal, this.deadline(call, started));
  }

  /**
   * POSTs a multipart form whose file, if any, is streamed from disk (never held in memory) and parses
   * the answer as JSON. A new form is built per call, so a failed upload can be sent again.
   */
  async upload(call: UpstreamUpload): Promise<unknown> {
    const form = new FormData();
    for (const [name, value] of call.fields) form.append(name, value);
    if (call.file !== undefined) {
      const file = await openAsBlob(call.file.path, { type: call.file.type });
      form.append(call.file.field, file, call.file.filename);
    }
    const started = performance.now();
    const response = await this.send(call, "application/json", form);
    return readJson(response, call.signal, this.deadline(call, started));
  }

  /**
   * Sends the call and reads the whole answer as bytes, with its content type; an answer larger
   * than `maxBytes` is cut off as a `protocol` failure.
   */
  async binary(call: UpstreamCall, accept: string, maxBytes = BINARY_ANSWER_LIMIT): Promise<BinaryAnswer> {
    const started = performance.now();
    const response = await this.send(call, accept, jsonBody(call.body));
    const header = response.headers["content-type"];
    const contentType = Array.isArray(header) ? header[0] : header;
    const declared = Number(response.headers["content-length"]);
    const tooLarge = () =>
      new UpstreamError("protocol", `the upstream sent an answer larger than ${maxBytes} bytes`);
    if (declared > maxBytes) {
      // Destroying an unread body makes it emit an abort error, which nobody else listens to.
      response.body.on("error", () => {}).destroy();
      throw tooLarge();
    }
    // As a JSON answer: a body trickled in keeps the silence timer quiet, not the request.
    const cancel = cutOffAt(response.body, this.deadline(call, started), "did not finish its answer");
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body) {
        const buffer = chunk as Buffer;
        size += buffer.length;
        // Leaving the loop destroys the body (and its connection).
        if (size > maxBytes) throw tooLarge();
        chunks.push(buffer);
      }
    } catch (error) {
      throw toUpstreamError(error, call.signal, "body");
    } finally {
      cancel();
    }
    return { body: Buffer.concat(chunks, size), contentType };
  }

  /**
   * Sends the call and resolves with the answer's body once its headers arrived with a 2xx
   * status. Errors while reading the body are thrown as UpstreamErrors; stopping the iteration
   * early closes the connection, which tells the upstream to stop generating.
   */
  async stream(call: UpstreamCall, accept: string): Promise<AsyncIterable<Uint8Array>> {
    const response = await this.send(call, accept, jsonBody(call.body));
    return guardBody(response.body, call.signal);
  }

  /**
   * Sends the call and parses its streamed answer with `parse` (SSE events, NDJSON lines). The first
   * item must come within the headers timeout counted from the send, as a whole answer must: bytes
   * that make no item (a trickle, comments, a line that never ends) do not hold the request. After
   * the first item only the body timeout applies. Stopping the iteration closes the connection.
   */
  async events<T>(
    call: UpstreamCall,
    accept: string,
    parse: (body: AsyncIterable<Uint8Array>) => AsyncIterable<T>,
  ): Promise<AsyncIterable<T>> {
    const started = performance.now();
    const response = await this.send(call, accept, jsonBody(call.body));
    const cancel = cutOffAt(response.body, this.deadline(call, started), "sent no complete event");
    return clearedAtFirst(parse(guardBody(response.body, call.signal)), cancel);
  }

  /** Closes the idle connections and waits for the running calls. */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.close()));
  }

  /** When an answer that started at `started` (performance.now()) must have come: its headers timeout later. */
  private deadline(call: Omit<UpstreamCall, "body">, started: number): number {
    return started + (call.headersTimeoutMs ?? this.timeouts.headersMs);
  }

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, this.poolOptions);
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Sends a request: GET (or the call's DELETE) without a payload, POST with JSON text or a form (which sets its own content type). */
  private async send(
    call: Omit<UpstreamCall, "body">,
    accept: string,
    payload: string | FormData | undefined,
  ): Promise<Dispatcher.ResponseData> {
    const { machine, signal } = call;
    if (signal.aborted) throw abortError(signal);
    const target = upstreamTarget(machine);
    const headers: Record<string, string> = { accept };
    if (machine.api_key !== undefined) headers.authorization = `Bearer ${machine.api_key}`;
    if (typeof payload === "string") headers["content-type"] = "application/json";
    let response: Dispatcher.ResponseData;
    try {
      response = await this.pool(target.origin).request({
        path: call.path,
        method: call.method ?? (payload === undefined ? "GET" : "POST"),
        headers,
        body: payload,
        signal,
        headersTimeout: call.headersTimeoutMs ?? this.timeouts.headersMs,
        bodyTimeout: call.bodyTimeoutMs ?? this.timeouts.bodyMs,
      });
    } catch (error) {
      throw toUpstreamError(error, signal, "request");
    }
    if (response.statusCode < 200 || response.statusCode > 299) {
      const keep = call.keepErrorAnswer === true;
      const text = await readErrorBody(response.body, keep ? ERROR_ANSWER_LIMIT : ERROR_BODY_LIMIT);
      if (signal.aborted) throw abortError(signal);
      const secrets = [machine.url, target.origin, machine.api_key];
      throw statusError(response.statusCode, text, secrets, keep);
    }
    return response;
  }
}

// One decoder for every answer: decode() without { stream } keeps no state between calls.
const UTF8 = new TextDecoder();

/** A call's body as JSON text (undefined: none, so a GET). */
function jsonBody(body: unknown): string | undefined {
  return body === undefined ? undefined : JSON.stringify(body);
}

/** Reads a whole answer as JSON: at most JSON_ANSWER_LIMIT bytes, all of it by `deadline` (performance.now() time). */
async function readJson(
  response: Dispatcher.ResponseData,
  signal: AbortSignal,
  deadline: number,
): Promise<unknown> {
  const body = response.body;
  const tooLarge = () =>
    new UpstreamError("protocol", `the upstream sent an answer larger than ${JSON_ANSWER_LIMIT} bytes`);
  if (Number(response.headers["content-length"]) > JSON_ANSWER_LIMIT) {
    body.on("error", () => {}).destroy();
    throw tooLarge();
  }
  const cancel = cutOffAt(body, deadline, "did not finish its answer");
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      // Leaving the loop destroys the body (and its connection).
      if (size > JSON_ANSWER_LIMIT) throw tooLarge();
      chunks.push(buffer);
    }
  } catch (error) {
    throw toUpstreamError(error, signal, "body");
  } finally {
    cancel();
  }
  // TextDecoder drops a byte-order mark, as undici's text() did.
  return parseJsonPayload(UTF8.decode(Buffer.concat(chunks, size)), "an answer");
}

/**
 * Destroys `body` with a `timeout` failure if it is still being read at `deadline`
 * (performance.now() time); returns what cancels that.
 */
function cutOffAt(body: Dispatcher.ResponseData["body"], deadline: number, what: string): () => void {
  const timer = setTimeout(
    () => {
      // Nobody may be reading yet: an unheard error event would end the process.
      body.on("error", () => {});
      body.destroy(new UpstreamError("timeout", `the upstream ${what} in time`));
    },
    Math.max(0, deadline - performance.now()),
  );
  timer.unref();
  return () => clearTimeout(timer);
}

/** Passes `items` through, calling `cancel` at the first one (or when the iteration ends). */
async function* clearedAtFirst<T>(items: AsyncIterable<T>, cancel: () => void): AsyncGenerator<T> {
  try {
    for await (const item of items) {
      cancel();
      yield item;
    }
  } finally {
    cancel();
  }
}

async function* guardBody(
  body: Dispatcher.ResponseData["body"],
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk as Uint8Array;
  } catch (error) {
    throw toUpstreamError(error, signal, "body");
  }
}

/**
 * The start of an error answer's body (at most `limit` bytes), read for its message; never waits
 * long for it. A body longer than `limit` is cut there (so it is no JSON any more).
 */
async function readErrorBody(body: Dispatcher.ResponseData["body"], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const timer = setTimeout(() => body.destroy(), ERROR_BODY_WAIT_MS);
  try {
    for await (const chunk of body) {
      const buffer = chunk as Buffer;
      chunks.push(buffer);
      size += buffer.length;
      if (size >= limit) break;
    }
  } catch {
    // What arrived is enough for a message.
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks).subarray(0, limit).toString("utf8");
}
