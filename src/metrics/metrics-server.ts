import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { METRICS_CONTENT_TYPE, type MetricsRegistry } from "./metrics-registry.ts";

/**
 * The metrics listener (`server.metrics_port`): a plain HTTP server apart from the API that answers
 * `GET /metrics` (and HEAD) with the registry, without a token, and 404 to anything else. It is
 * meant for a private address (by default 127.0.0.1) that only the Prometheus server reaches.
 */
export class MetricsServer {
  private readonly metrics: MetricsRegistry;
  private readonly server: Server;

  constructor(metrics: MetricsRegistry) {
    this.metrics = metrics;
    this.server = createServer((request, response) => {
      const path = (request.url ?? "").split("?", 1)[0];
      if (path !== "/metrics" || (request.method !== "GET" && request.method !== "HEAD")) {
        response.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("Not Found\n");
        return;
      }
      this.metrics.render().then(
        (text) => {
          response.writeHead(200, { "content-type": METRICS_CONTENT_TYPE });
          response.end(request.method === "HEAD" ? undefined : text);
        },
        () => response.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("Error\n"),
      );
    });
  }

  /** Starts listening; resolves with the port (the real one when `port` is 0). */
  listen(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve((this.server.address() as AddressInfo).port);
      });
    });
  }

  /** Stops listening and closes the scrapers' idle connections. */
  close(): Promise<void> {
    if (!this.server.listening) return Promise.resolve();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      // A scraper keeps its connection open between scrapes; the close must not wait for it.
      this.server.closeIdleConnections();
    });
  }
}
