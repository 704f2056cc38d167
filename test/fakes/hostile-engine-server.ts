import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Answer, answerFor } from "./hostile-engine-answers.ts";

/**
 * How an answer misbehaves (hostile engines). Stream-only ones (`no-data-prefix`,
 * `bad-event-mid`, `long-line`, `no-done`) and `huge` (non-streamed only) fall back to `invalid-json`
 * where they have no meaning.
 */
export type Misbehaviour =
  | "well" // a valid answer in the protocol
  | "hang" // the request is read and never answered
  | "headers-hang" // 200 and headers, then silence
  | "cut-body" // half of a declared Content-Length (streams: two events), then the socket is destroyed
  | "invalid-json" // 200 with a body that is not JSON (streams: a first event that is not JSON)
  | "no-data-prefix" // SSE lines without `data:`, then the end
  | "bad-event-mid" // two good events, one whose JSON is broken, the rest
  | "long-line" // one good event, then one of `longLineBytes` (valid JSON), then the rest
  | "no-done" // the events without the finish, usage and [DONE] (Ollama: without `done: true`), then the end
  | "end-mid-event" // the body ends cleanly in the middle of the JSON or of an event
  | "endless" // the start of a JSON value (streams: after one good event), then bytes forever
  | "flood" // streams: one good event, then good events forever (whole answers: as `endless`)
  | "huge" // a valid JSON answer of `hugeBytes`, declared in Content-Length, sent as fast as it is read
  | "trickle" // the valid answer, one byte every `trickleMs`
  | "html-500" // 500 with an HTML page
  | "html-503"; // 503 with an HTML page

/** How health probes and model listings are answered: 200, 503 with HTML, or never. */
export type Health = "up" | "down" | "hang";

/** Sizes and paces of the misbehaviours. */
export interface HostileSettings {
  trickleMs: number;
  longLineBytes: number;
  /** An endless body stops here, so a gateway that reads everything still lets the test end. */
  endlessCapBytes: number;
  hugeBytes: number;
}

/** The defaults: a 10 MB line, 512 MiB at most of endless body, a 200 MB huge body, a byte every 50 ms. */
export const DEFAULT_HOSTILE_SETTINGS: HostileSettings = {
  trickleMs: 50,
  longLineBytes: 10_000_000,
  endlessCapBytes: 512 * 1024 * 1024,
  hugeBytes: 200_000_000,
};

/** One answer request (not probes or listings) and how it ended. */
export interface HostileExchange {
  /** The first path segment (the machine's url prefix), or "" when the path has none. */
  label: string;
  path: string;
  model: string | undefined;
  stream: boolean;
  behaviour: Misbehaviour;
  /** Bytes of body handed to the socket. */
  bytesSent: number;
  /** `ended`: the server finished its answer; `destroyed`: the server cut it; `closed`: the client hung up first. */
  end: "open" | "ended" | "destroyed" | "closed";
  startedAt: number;
  endedAt: number | undefined;
}

type Json = Record<string, unknown>;
const ANSWER_PATHS = new Set([
  "/v1/chat/completions",
  "/v1/completions",
  "/v1/embeddings",
  "/api/chat",
  "/api/generate",
  "/api/embed",
  "/embed",
]);
const HTML = (status: number) =>
  `<html><head><title>${status}</title></head><body><center><h1>${status} Service Unavailable</h1></center><hr><center>nginx</center></body></html>`;

/**
 * An engine that misbehaves on purpose: a real HTTP server on 127.0.0.1 speaking the OpenAI
 * (`/v1/chat/completions`, `/v1/completions`, `/v1/embeddings`), Ollama (`/api/chat`,
 * `/api/generate` NDJSON, `/api/embed`) and TEI (`/embed`) protocols. What it does is chosen per
 * machine (the first path segment of the machine's url: `http://127.0.0.1:port/<label>`) or per
 * model, with `behave`, and can be changed at any time (`well` behaves again). It logs every answer
 * request with the bytes it sent and who ended it.
 */
export class HostileEngineServer {
  readonly exchanges: HostileExchange[] = [];
  readonly settings: HostileSettings;
  private readonly behaviours = new Map<string, Misbehaviour>();
  private readonly health = new Map<string, Health>();
  private readonly server: Server;
  private port = 0;

  constructor(settings: Partial<HostileSettings> = {}) {
    this.settings = { ...DEFAULT_HOSTILE_SETTINGS, ...settings };
    this.server = createServer((req, res) => void this.serve(req, res).catch(() => res.destroy()));
  }

  get url(): string {
    if (this.port === 0) throw new Error("the hostile server has not been started");
    return `http://127.0.0.1:${this.port}`;
  }

  /** How requests to a machine label (or for a model) are answered from now on. */
  behave(labelOrModel: string, behaviour: Misbehaviour): void {
    this.behaviours.set(labelOrModel, behaviour);
  }

  /** How probes and listings of a machine label are answered from now on. */
  setHealth(label: string, health: Health): void {
    this.health.set(label, health);
  }

  /** The answer requests of a label. */
  exchangesOf(label: string): HostileExchange[] {
    return this.exchanges.filter((exchange) => exchange.label === label);
  }

  /** Answers that neither side has ended (a leak of connections, when it stays above 0). */
  openExchanges(): HostileExchange[] {
    return this.exchanges.filter((exchange) => exchange.end === "open");
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Stops listening and cuts every connection, hanging and endless ones included. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const [label, rest] = splitLabel(req.url ?? "/");
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = parseBody(Buffer.concat(chunks).toString("utf8"));
    if (req.method === "GET") return this.serveHealth(label, rest, res);
    const model = typeof body.model === "string" ? body.model : undefined;
    const behaviour =
      this.behaviours.get(label) ?? (model !== undefined ? this.behaviours.get(model) : undefined) ?? "well";
    const answer = answerFor(rest, body);
    if (answer === undefined || !ANSWER_PATHS.has(rest)) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    const exchange: HostileExchange = {
      label,
      path: rest,
      model,
      stream: answer.framing !== "json",
      behaviour,
      bytesSent: 0,
      end: "open",
      startedAt: Date.now(),
      endedAt: undefined,
    };
    this.exchanges.push(exchange);
    res.once("close", () => {
      if (exchange.end === "open") exchange.end = "closed";
      exchange.endedAt ??= Date.now();
    });
    await this.misbehave(behaviour, answer, res, exchange);
  }

  private serveHealth(label: string, path: string, res: ServerResponse): void {
    const health = this.health.get(label) ?? "up";
    if (health === "hang") return;
    if (health === "down") {
      res.writeHead(503, { "content-type": "text/html" }).end(HTML(503));
      return;
    }
    const listing: Record<string, unknown> = {
      "/v1/models": { object: "list", data: [{ id: label, object: "model" }] },
      "/api/tags": { models: [{ name: `${label}:latest`, model: `${label}:latest` }] },
      "/api/version": { version: "0.12.6" },
      "/info": { model_id: label, max_input_length: 8192 },
    };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(listing[path] ?? {}));
  }

  private async misbehave(
    behaviour: Misbehaviour,
    answer: Answer,
    res: ServerResponse,
    exchange: HostileExchange,
  ): Promise<void> {
    const stream = answer.framing !== "json";
    const send = (text: string | Buffer) => writeCounted(res, exchange, text);
    const finish = () => {
      exchange.end = "ended";
      res.end();
    };
    const destroy = () => {
      exchange.end = "destroyed";
      res.destroy();
    };
    const head = (length?: number) =>
      res.writeHead(200, {
        "content-type": answer.contentType,
        ...(length !== undefined ? { "content-length": length } : {}),
      });
    const whole = answer.pieces.join("");
    const broken = answer.framing === "sse" ? 'data: {"id": "broken", nope\n\n' : '{"broken": nope\n';
    switch (fallback(behaviour, stream)) {
      case "well":
        head(stream ? undefined : Buffer.byteLength(whole));
        await send(whole);
        return finish();
      case "hang":
        return;
      case "headers-hang":
        head();
        res.flushHeaders();
        return;
      case "cut-body": {
        if (!stream) {
          head(Buffer.byteLength(whole));
          await send(whole.slice(0, Math.floor(whole.length / 2)));
        } else {
          head();
          await send(answer.pieces.slice(0, 2).join(""));
        }
        return destroy();
      }
      case "invalid-json": {
        const text = stream
          ? [broken, ...answer.pieces.slice(1)].join("")
          : '{"id": "broken", "choices": [nope]}';
        head(stream ? undefined : Buffer.byteLength(text));
        await send(text);
        return finish();
      }
      case "no-data-prefix":
        head();
        await send(answer.pieces.map((piece) => piece.replace(/^data: /, "")).join(""));
        return finish();
      case "bad-event-mid":
        head();
        await send([...answer.pieces.slice(0, 2), broken, ...answer.pieces.slice(2)].join(""));
        return finish();
      case "long-line":
        head();
        await send(answer.pieces[0] ?? "");
        await send(answer.contentPiece("x".repeat(this.settings.longLineBytes)));
        await send(answer.pieces.slice(1).join(""));
        return finish();
      case "no-done":
        head();
        await send(answer.pieces.slice(0, answer.pieces.length - answer.closing).join(""));
        return finish();
      case "end-mid-event": {
        head();
        const third = answer.pieces[2] ?? "";
        const text = stream
          ? `${answer.pieces.slice(0, 2).join("")}${third.slice(0, Math.floor(third.length / 2))}`
          : whole.slice(0, Math.floor(whole.length / 2));
        await send(text);
        return finish();
      }
      case "endless":
        head();
        if (stream) await send(answer.pieces[0] ?? "");
        await send(answer.endless.prefix);
        await this.pour(res, exchange, this.settings.endlessCapBytes);
        return exchange.end === "open" ? destroy() : undefined;
      case "flood": {
        head();
        await send(answer.pieces[0] ?? "");
        const event = Buffer.from(answer.contentPiece("a".repeat(1_000)));
        while (exchange.end === "open" && exchange.bytesSent < this.settings.endlessCapBytes)
          await send(event);
        return exchange.end === "open" ? destroy() : undefined;
      }
      case "huge": {
        const { prefix, suffix } = answer.endless;
        head(this.settings.hugeBytes);
        await send(prefix);
        await this.pour(res, exchange, this.settings.hugeBytes - Buffer.byteLength(suffix));
        if (exchange.end !== "open") return;
        await send(suffix);
        return finish();
      }
      case "trickle": {
        head(stream ? undefined : Buffer.byteLength(whole));
        for (const byte of Buffer.from(whole)) {
          if (exchange.end !== "open") return;
          await send(Buffer.of(byte));
          await delay(this.settings.trickleMs);
        }
        return exchange.end === "open" ? finish() : undefined;
      }
      case "html-500":
      case "html-503": {
        const status = behaviour === "html-500" ? 500 : 503;
        res.writeHead(status, { "content-type": "text/html" });
        await send(HTML(status));
        return finish();
      }
    }
  }

  /** Writes "a" until `total` bytes were sent in all or the client hung up, at the pace the client reads. */
  private async pour(res: ServerResponse, exchange: HostileExchange, total: number): Promise<void> {
    const block = Buffer.alloc(64 * 1024, "a");
    while (exchange.end === "open" && exchange.bytesSent < total) {
      const left = total - exchange.bytesSent;
      await writeCounted(res, exchange, left < block.length ? block.subarray(0, left) : block);
    }
  }
}

/** The misbehaviour that applies: stream-only ones become invalid JSON for a whole answer, and `huge` a plain endless stream. */
function fallback(behaviour: Misbehaviour, stream: boolean): Misbehaviour {
  const streamOnly = ["no-data-prefix", "bad-event-mid", "long-line", "no-done"];
  if (!stream && streamOnly.includes(behaviour)) return "invalid-json";
  if (stream && behaviour === "huge") return "endless";
  if (!stream && behaviour === "flood") return "endless";
  return behaviour;
}

// Resolves once the bytes left for the socket (so a destroy after it cuts nothing sent before), or it closed.
function writeCounted(res: ServerResponse, exchange: HostileExchange, bytes: string | Buffer): Promise<void> {
  if (exchange.end !== "open" || res.destroyed) return Promise.resolve();
  exchange.bytesSent += Buffer.byteLength(bytes);
  return new Promise((resolve) => {
    const done = () => {
      res.off("close", done);
      resolve();
    };
    res.on("close", done);
    res.write(bytes, done);
  });
}

function splitLabel(url: string): [label: string, rest: string] {
  const path = url.split("?", 1)[0] ?? "/";
  if (ANSWER_PATHS.has(path) || /^\/(health|v1|api|info)(\/|$)/.test(path)) return ["", path];
  const slash = path.indexOf("/", 1);
  return slash === -1 ? [path.slice(1), "/"] : [path.slice(1, slash), path.slice(slash)];
}

function parseBody(text: string): Json {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : {};
  } catch {
    return {};
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
