import { request } from "node:http";

/** What a raw HTTP exchange returned. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Bytes of the request body written before the answer came. */
  bytesSent: number;
}

/**
 * Sends a request whose body is produced chunk by chunk (so a test can claim a size it never
 * sends) and resolves with the first answer, stopping the upload as soon as it arrives.
 */
export function rawRequest(
  url: string,
  options: { method: string; headers: Record<string, string | number>; chunk: Buffer; chunks: number },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let bytesSent = 0;
    let answered = false;
    const req = request(url, { method: options.method, headers: options.headers }, (res) => {
      answered = true;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (part: string) => {
        body += part;
      });
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, bytesSent });
        req.destroy();
      });
    });
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    let sent = 0;
    const pump = () => {
      while (!answered && sent < options.chunks) {
        sent += 1;
        bytesSent += options.chunk.length;
        if (!req.write(options.chunk)) {
          req.once("drain", pump);
          return;
        }
      }
      if (!answered && sent >= options.chunks) req.end();
    };
    pump();
  });
}
