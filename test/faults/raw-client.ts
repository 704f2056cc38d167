import { connect, type Socket } from "node:net";

/** A client on a raw TCP socket, to misbehave as no HTTP library lets one. */
export interface RawClient {
  socket: Socket;
  /** Bytes received so far (while reading). */
  bytesReceived: number;
  /** What was received, as text (the first 64 KB). */
  text(): string;
  /** The status of the answer received, 0 before one. */
  status(): number;
  /** Resolves with the milliseconds from the connection to its close, whoever closed it. */
  closed: Promise<number>;
  /** Whether the socket is closed. */
  isClosed(): boolean;
  /** Writes and resolves once the bytes are handed to the kernel. */
  send(bytes: string | Buffer): Promise<void>;
  /** Stops reading: the kernel's buffers fill and the TCP window closes. */
  stopReading(): void;
  /** Closes the connection abruptly (a client that goes away). */
  destroy(): void;
}

const KEPT_TEXT = 64 * 1024;

/** Opens a connection to 127.0.0.1:`port`. */
export function openRaw(port: number): Promise<RawClient> {
  const socket = connect(port, "127.0.0.1");
  const started = performance.now();
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let closedFlag = false;
  const client: RawClient = {
    socket,
    bytesReceived: 0,
    text: () => Buffer.concat(kept).toString("latin1"),
    status: () => Number(/^HTTP\/1\.1 (\d{3})/.exec(client.text())?.[1] ?? 0),
    closed: new Promise((resolve) =>
      socket.once("close", () => {
        closedFlag = true;
        resolve(performance.now() - started);
      }),
    ),
    isClosed: () => closedFlag,
    send: (bytes) =>
      new Promise((resolve) => {
        if (socket.destroyed) resolve();
        else socket.write(bytes, () => resolve());
      }),
    stopReading: () => socket.pause(),
    destroy: () => socket.destroy(),
  };
  socket.on("data", (chunk: Buffer) => {
    client.bytesReceived += chunk.length;
    if (keptBytes < KEPT_TEXT) {
      kept.push(chunk);
      keptBytes += chunk.length;
    }
  });
  // A reset by the server is one way of closing; the test reads `closed`.
  socket.on("error", () => {});
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(client));
    socket.once("error", reject);
  });
}

/** The request line and headers of a request, ending with the blank line. */
export function head(method: string, path: string, headers: Record<string, string | number> = {}): string {
  const lines = [`${method} ${path} HTTP/1.1`, "Host: 127.0.0.1"];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** The boundary of the forms `multipart` builds. */
export const BOUNDARY = "----zona-fault-boundary-7c1e";

/** A multipart/form-data body in its three pieces: before the file's bytes, the bytes, after them. */
export interface MultipartPieces {
  contentType: string;
  /** Text fields, then the file part's headers. */
  before: Buffer;
  file: Buffer;
  /** The end of the file part and the final boundary. */
  after: Buffer;
  whole: Buffer;
}

/** Builds a form of text fields and one file. */
export function multipart(
  fields: Record<string, string>,
  fileField: string,
  filename: string,
  file: Buffer,
): MultipartPieces {
  const boundary = BOUNDARY;
  const parts = Object.entries(fields).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  );
  const before = Buffer.from(
    `${parts.join("")}--${boundary}\r\nContent-Disposition: form-data; name="${fileField}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const after = Buffer.from(`\r\n--${boundary}--\r\n`);
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    before,
    file,
    after,
    whole: Buffer.concat([before, file, after]),
  };
}
