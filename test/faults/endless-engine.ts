import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the engine did with one streamed answer. */
export interface StreamLog {
  /** Bytes of the answer the engine's socket accepted (what it buffers beyond that is one event). */
  bytesSent: number;
  /** The answer was written to its end. */
  finished: boolean;
  /** The connection closed before the end: Zona cancelled the upstream request. */
  closedEarly: boolean;
}

/**
 * An OpenAI-style engine (vLLM) whose streamed chat answers are as long as `answerBytes` and written
 * as fast as the connection takes them: a write the socket refuses waits for `drain`. So the bytes it
 * managed to send tell whether Zona stopped reading when its own client did (backpressure).
 */
export class EndlessEngine {
  readonly streams: StreamLog[] = [];
  private readonly server: Server;
  private readonly answerBytes: number;

  constructor(answerBytes: number) {
    this.answerBytes = answerBytes;
    this.server = createServer((req, res) => void this.serve(req, res).catch(() => res.destroy()));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [] }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as {
      model?: string;
      stream?: boolean;
    };
    if (body.stream !== true) {
      // A short answer to what is not streamed (the automatic title of a conversation).
      const message = { role: "assistant", content: "Endless" };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "chatcmpl-short",
          object: "chat.completion",
          created: 1,
          model: body.model,
          choices: [{ index: 0, message, finish_reason: "stop" }],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        }),
      );
      return;
    }
    const log: StreamLog = { bytesSent: 0, finished: false, closedEarly: false };
    this.streams.push(log);
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.once("close", () => {
      if (!log.finished) log.closedEarly = true;
    });
    const base = { id: "chatcmpl-endless", object: "chat.completion.chunk", created: 1, model: body.model };
    // 32 words of four characters and a space per event: about 8 tokens each for Zona's estimate.
    const event = `data: ${JSON.stringify({
      ...base,
      choices: [{ index: 0, delta: { content: "word ".repeat(32) }, finish_reason: null }],
    })}\n\n`;
    const piece = Buffer.from(event.repeat(16));
    while (log.bytesSent < this.answerBytes) {
      if (res.destroyed) return;
      const accepted = res.write(piece);
      log.bytesSent += piece.length;
      if (!accepted) await drainedOrClosed(res);
    }
    const end = { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] };
    res.end(`data: ${JSON.stringify(end)}\n\ndata: [DONE]\n\n`);
    log.finished = true;
  }
}

function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
