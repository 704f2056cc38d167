import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MetricsRegistry } from "../../src/metrics/metrics-registry.ts";
import { readJson } from "../helpers/read-json.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

describe("Operator API: GET /admin/v1/metrics, the rate-limit counters in the Prometheus text format", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { tiers: { slow: { multiplier: 1, requests_per_minute: 1 } } } });
  });
  afterAll(() => t.close());

  const metrics = () => t.fetch("/admin/v1/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

  it("needs the admin token (401 invalid_admin_token without it)", async () => {
    const response = await t.fetch("/admin/v1/metrics");
    expect(response.status).toBe(401);
    expect((await readJson(response)).error.code).toBe("invalid_admin_token");
  });

  it("lists the fallback and refusal counters with HELP and TYPE, and counts 429s by limiter", async () => {
    const { key } = await t.newKey();
    const headers = { authorization: `Bearer ${key}` };
    expect((await t.fetch("/v1/models", { headers })).status).toBe(200);
    expect((await t.fetch("/v1/models", { headers })).status).toBe(429);
    const response = await metrics();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await response.text();
    expect(text).toContain(
      "# TYPE zona_rate_limit_fallback_total counter\nzona_rate_limit_fallback_total 0\n",
    );
    expect(text).toMatch(/^# HELP zona_rate_limit_fallback_total .+$/m);
    expect(text).toContain(
      '# TYPE zona_rate_limit_refused_total counter\nzona_rate_limit_refused_total{limiter="tier"} 1\n',
    );
  });
});

describe("Metrics registry (one prom-client registry per app)", () => {
  it("keeps each app's series apart and shows the process's default metrics in every one", async () => {
    const a = new MetricsRegistry();
    const b = new MetricsRegistry();
    a.counter("zona_things_total", "Things.").inc(3);
    b.counter("zona_things_total", "Things.").inc(1);
    const [textA, textB] = [await a.render(), await b.render()];
    expect(textA).toContain("# TYPE zona_things_total counter\nzona_things_total 3\n");
    expect(textB).toContain("# TYPE zona_things_total counter\nzona_things_total 1\n");
    for (const text of [textA, textB]) {
      expect(text).toMatch(/^process_cpu_seconds_total \d/m);
      expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    }
    // A name is registered once per registry, as in Prometheus.
    expect(() => a.counter("zona_things_total", "Things.")).toThrow();
  });
});
