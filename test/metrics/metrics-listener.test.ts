import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.ts";
import { parseConfig } from "../../src/config/load.ts";
import { freePort } from "../helpers/free-port.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { Scrape } from "./scrape.ts";

describe("the metrics listener of server.metrics_port serves GET /metrics apart from the public port", () => {
  let t: TestApp;
  let metricsUrl: string;
  let closed = false;
  beforeAll(async () => {
    const port = await freePort();
    t = await startTestApp({ config: { server: { metrics_port: port, metrics_host: "127.0.0.1" } } });
    metricsUrl = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    if (!closed) await t.close();
  });

  it("answers GET /metrics without a token, in the Prometheus text format, with the app's series", async () => {
    expect((await t.fetch("/healthz")).status).toBe(200);
    const response = await fetch(`${metricsUrl}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const s = await Scrape.parse(await response.text());
    expect(
      s.value("zona_http_requests_total", { route: "/healthz", method: "GET", status: "200", model: "" }),
    ).toBe(1);
    expect(s.family("process_cpu_seconds_total").type).toBe("counter");
  });

  it.each([
    ["GET", "/"],
    ["GET", "/metricsx"],
    ["GET", "/admin/v1/metrics"],
    ["GET", "/v1/models"],
    ["POST", "/metrics"],
  ])("answers 404 to anything else: %s %s", async (method, path) => {
    const response = await fetch(`${metricsUrl}${path}`, { method });
    expect(response.status).toBe(404);
    expect(await response.text()).not.toContain("zona_");
  });

  it("the public port has no /metrics, and the operator API's needs the token", async () => {
    const open = await t.fetch("/metrics");
    expect(open.status).toBe(404);
    expect(await open.text()).not.toContain("zona_");
    const admin = await t.fetch("/admin/v1/metrics");
    expect(admin.status).toBe(401);
    expect((await readJson(admin)).error.code).toBe("invalid_admin_token");
  });

  it("closes with the app", async () => {
    const kept = await fetch(`${metricsUrl}/metrics`);
    expect(kept.status).toBe(200);
    await kept.text();
    await t.close();
    closed = true;
    await expect(fetch(`${metricsUrl}/metrics`)).rejects.toThrow();
  });
});

describe("a metrics port already in use stops the start", () => {
  it("the app does not become ready, with the listener's error", async () => {
    const first = await startTestApp({ config: { server: { metrics_port: await freePort() } } });
    const config = parseConfig({
      server: { log_level: "silent", metrics_port: first.config.server.metrics_port },
    });
    const second = await buildApp({ config, store: first.store });
    try {
      await expect(second.ready()).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await second.close().catch(() => {});
      await first.close();
    }
  });
});
