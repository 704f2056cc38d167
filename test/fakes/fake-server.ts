import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { echoingError, type FakeErrorEcho, midStreamError, requestText } from "./fake-echo.ts";
import { readMultipart } from "./fake-multipart.ts";

/**
 * How a fake behaves. `refuse`: the port is closed (connections are refused); `error500`: every
 * request gets an error status (500 unless `errorStatus` says otherwise) with the protocol's error
 * body; `hang`: requests are read and never answered; `slow`: `slowMs` before the first byte;
 * `dropMidStream`: `dropAfterChunks` pieces of a stream (half of a JSON body) and then the socket
 * is destroyed; `errorMidStream`: `dropAfterChunks` pieces of a stream, then the protocol's error event
 * (other answers are normal).
 */
export type FakeMode =
  | "normal"
  | "refuse"
  | "error500"
  | "hang"
  | "slow"
  | "dropMidStream"
  | "errorMidStream";

/** Knobs of a fake, changeable at any time with `configure`. */
export interface FakeSettings {
  /** Content pieces of a generated text (cycling its words); undefined: one piece per word. */
  chunks: number | undefined;
  /** Pause between two pieces of a stream. */
  chunkDelayMs: number;
  /** Pause before the first byte in `slow` mode. */
  slowMs: number;
  /** Pieces (SSE events, NDJSON lines) sent before the socket is destroyed in `dropMidStream` mode. */
  dropAfterChunks: number;
  /** The status of `error500` mode. */
  errorStatus: number;
  /** Whether the errors of `error500` and `errorMidStream` repeat the request (see fake-echo.ts). */
  errorEcho: FakeErrorEcho;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` (401 otherwise). */
  apiKey: string | undefined;
  /** The models served; others get the protocol's 404. Undefined: any model. */
  models: string[] | undefined;
  /** Leave usage out of answers and streams (as some servers do), to exercise estimates. */
  omitUsage: boolean;
  /** Dimensions of embeddings. */
  dimensions: number;
  /**
   * Embeddings by words (a bag of words hashed into the dimensions) instead of a hash of the whole
   * text: texts that share words are near, so a search finds the passage that answers a question.
   */
  wordEmbeddings: boolean;
}

/** The defaults of every fake. */
export const DEFAULT_FAKE_SETTINGS: FakeSettings = {
  chunks: undefined,
  chunkDelayMs: 0,
  slowMs: 300,
  dropAfterChunks: 2,
  errorStatus: 500,
  errorEcho: "none",
  apiKey: undefined,
  models: undefined,
  omitUsage: false,
  dimensions: 1024,
  wordEmbeddings: false,
};

/** One request a fake received. */
export interface FakeRequest {
  method: string;
  /** The path without the query. */
  path: string;
  /** The query parameters (empty when there are none). */
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /**
   * The body parsed as JSON; the raw text when it is not JSON; a FakeMultipart for a
   * multipart/form-data upload; undefined when empty.
   */
  body: unknown;
}

/** What a protocol answers; the base applies the failure modes to it. */
export type FakeReply =
  | { type: "json"; status: number; body: unknown }
  | { type: "stream"; contentType: string; pieces: string[] }
  | { type: "binary"; status: number; contentType: string; body: Buffer }
  | { type: "empty"; status: number };

/** The protocol a fake speaks. */
export interface FakeProtocol {
  /** May answer asynchronously (fakes that render media). */
  handle(request: FakeRequest, settings: FakeSettings): FakeReply | Promise<FakeReply>;
  /** The protocol's error body for a status. */
  errorBody(status: number, message: string): unknown;
}

/** What `start` resolves with. */
export interface StartedFake {
  url: string;
  close(): Promise<void>;
}

/** A fake engine: a real HTTP server on 127.0.0.1 speaking one upstream protocol, with a request log and failure modes. */
export class FakeServer {
  /** Every request received, in order. */
  readonly requests: FakeRequest[] = [];
  /** Streams the client went away from before their end (a gateway must cancel upstream work). */
  abandonedStreams = 0;
  /** TCP connections accepted: with keep-alive, far fewer than requests. */
  connections = 0;
  readonly settings: FakeSettings;
  private currentMode: FakeMode = "normal";
  private readonly protocol: FakeProtocol;
  private readonly server: Server;
  private port = 0;
  private listening = false;

  constructor(protocol: FakeProtocol, settings: Partial<FakeSettings> = {}) {
    this.protocol = protocol;
    this.settings = { ...DEFAULT_FAKE_SETTINGS, ...settings };
    this.server = createServer((req, res) => {
      this.serve(req, res).catch(() => res.destroy());
    });
    this.server.on("connection", () => {
      this.connections++;
    });
  }

  /** The mode in force. */
  get mode(): FakeMode {
    return this.currentMode;
  }

  /** The base url (http://127.0.0.1:<port>), once started. */
  get url(): string {
    if (this.port === 0) throw new Error("the fake has not been started");
    return `http://127.0.0.1:${this.port}`;
  }

  /** The last request received (throws when there is none). */
  get lastRequest(): FakeRequest {
    const last = this.requests.at(-1);
    if (last === undefined) throw new Error("the fake has received no request");
    return last;
  }

  /** Starts listening on a free loopback port. */
  async start(): Promise<StartedFake> {
    await this.listen();
    return { url: this.url, close: () => this.close() };
  }

  /** Switches the mode (and optionally settings); `refuse` closes the port, leaving it reopens the same port. */
  async setMode(mode: FakeMode, settings: Partial<FakeSettings> = {}): Promise<void> {
    this.configure(settings);
    this.currentMode = mode;
    if (mode === "refuse" && this.listening) await this.stopListening();
    else if (mode !== "refuse" && !this.listening && this.port !== 0) await this.listen();
  }

  /** Changes settings. */
  configure(settings: Partial<FakeSettings>): void {
    Object.assign(this.settings, settings);
  }

  /** Forgets the logged requests (and the counts of abandoned streams and connections). */
  clearRequests(): void {
    this.requests.length = 0;
    this.abandonedStreams = 0;
    this.connections = 0;
  }

  /** The logged requests to one path. */
  requestsTo(path: string): FakeRequest[] {
    return this.requests.filter((request) => request.path === path);
  }

  /** Stops listening and cuts every connection (also hanging ones). */
  async close(): Promise<void> {
    if (this.listening) await this.stopListening();
  }

  private listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.port, "127.0.0.1", () => {
        this.server.off("error", reject);
        this.port = (this.server.address() as AddressInfo).port;
        this.listening = true;
        resolve();
      });
    });
  }

  private stopListening(): Promise<void> {
    this.listening = false;
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = await readRequest(req);
    this.requests.push(request);
    const mode = this.currentMode;
    if (mode === "hang") return;
    if (mode === "slow") {
      await delay(this.settings.slowMs);
      if (res.destroyed) return;
    }
    const reply = await this.reply(request, mode);
    if (res.destroyed) return;
    if (reply.type === "empty") {
      res.writeHead(reply.status).end();
    } else if (reply.type === "json" || reply.type === "binary") {
      const bytes = reply.type === "json" ? Buffer.from(JSON.stringify(reply.body)) : reply.body;
      res.writeHead(reply.status, {
        "content-type": reply.type === "json" ? "application/json" : reply.contentType,
        "content-length": bytes.length,
      });
      if (mode === "dropMidStream") {
        res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.destroy());
      } else {
        res.end(bytes);
      }
    } else if (mode === "errorMidStream") {
      const message =
        this.settings.errorEcho === "none" ? "fake failure" : `failed on ${requestText(request)}`;
      const pieces = reply.pieces.slice(0, this.settings.dropAfterChunks);
      await this.sendStream(
        res,
        reply.contentType,
        [...pieces, midStreamError(reply.contentType, message)],
        false,
      );
    } else {
      await this.sendStream(res, reply.contentType, reply.pieces, mode === "dropMidStream");
    }
  }

  private reply(request: FakeRequest, mode: FakeMode): FakeReply | Promise<FakeReply> {
    const { settings } = this;
    const protocol = this.protocol;
    if (mode === "error500" && settings.errorEcho !== "none") {
      return echoingError(settings.errorStatus, settings.errorEcho, request);
    }
    if (mode === "error500") {
      return {
        type: "json",
        status: settings.errorStatus,
        body: protocol.errorBody(settings.errorStatus, "fake failure"),
      };
    }
    if (settings.apiKey !== undefined && request.headers.authorization !== `Bearer ${settings.apiKey}`) {
      return { type: "json", status: 401, body: protocol.errorBody(401, "Unauthorized") };
    }
    return protocol.handle(request, settings);
  }

  private async sendStream(
    res: ServerResponse,
    contentType: string,
    pieces: string[],
    drop: boolean,
  ): Promise<void> {
    res.writeHead(200, { "content-type": contentType, "cache-control": "no-cache" });
    res.flushHeaders();
    let ended = false;
    res.once("close", () => {
      if (!ended) this.abandonedStreams++;
    });
    for (let i = 0; i < pieces.length; i++) {
      if (i > 0 && this.settings.chunkDelayMs > 0) await delay(this.settings.chunkDelayMs);
      if (res.destroyed) return;
      if (drop && i === this.settings.dropAfterChunks) {
        ended = true;
        res.destroy();
        return;
      }
      // Before a drop, the pieces must have left: destroying discards what is still buffered.
      if (drop) await new Promise<void>((resolve) => res.write(pieces[i], () => resolve()));
      else res.write(pieces[i]);
    }
    ended = true;
    if (drop) {
      res.destroy();
      return;
    }
    res.end();
  }
}

async function readRequest(req: IncomingMessage): Promise<FakeRequest> {
  const [path = "/", search = ""] = (req.url ?? "/").split("?", 2);
  const query = new URLSearchParams(search);
  if (req.headers["content-type"]?.startsWith("multipart/form-data")) {
    return { method: req.method ?? "GET", path, query, headers: req.headers, body: await readMultipart(req) };
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  let body: unknown;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { method: req.method ?? "GET", path, query, headers: req.headers, body };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The protocol knobs of a fake's settings go into `knobs` (the object its protocol reads); what is
 * left is the base settings, for FakeServer.configure.
 */
export function takeKnobs<K extends object>(
  settings: Partial<FakeSettings> & Partial<K>,
  knobs: K,
  keys: ReadonlyArray<keyof K>,
): Partial<FakeSettings> {
  const base: Record<string, unknown> = { ...settings };
  for (const key of keys) {
    if (key in settings) {
      Object.assign(knobs, { [key]: settings[key] });
      delete base[key as string];
    }
  }
  return base as Partial<FakeSettings>;
}
