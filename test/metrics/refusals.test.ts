import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import { Scrape } from "./scrape.ts";

const MODEL = "gemma3.8-27b";
const HIGH_LIMITS = { slow: { multiplier: 1, requests_per_minute: 100_000 } };

function post(t: TestApp, path: string, body: unknown, auth?: string) {
  return t.fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
    body: JSON.stringify(body),
  });
}

async function scrape(t: TestApp): Promise<Scrape> {
  const response = await t.fetch("/admin/v1/metrics", {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  return Scrape.parse(await response.text());
}

/** [rule, configuration, traffic that ends in one refusal, the series and labels that count it]. */
const CASES: Array<
  [string, Record<string, unknown>, (t: TestApp) => Promise<void>, string, Record<string, string>]
> = [
  [
    "endpoint limit (transcriptions 30 a minute per key): limiter endpoint",
    { tiers: HIGH_LIMITS },
    async (t) => {
      const { key } = await t.newKey();
      for (let i = 0; i < 30; i++) await post(t, "/v1/audio/transcriptions", {}, key);
      expect((await post(t, "/v1/audio/transcriptions", {}, key)).status).toBe(429);
    },
    "zona_rate_limit_refused_total",
    { limiter: "endpoint" },
  ],
  [
    "address limit (app /auth/login 10 a minute per address): limiter address",
    {},
    async (t) => {
      for (let i = 0; i < 10; i++) await post(t, "/api/v1/auth/login", {});
      expect((await post(t, "/api/v1/auth/login", {})).status).toBe(429);
    },
    "zona_rate_limit_refused_total",
    { limiter: "address" },
  ],
  [
    "prepaid credits exhausted (402 insufficient_credits): reason insufficient_credits",
    {
      tiers: HIGH_LIMITS,
      installation: { prepaid: true, currency: "credits" },
      models: [
        { id: MODEL, kind: "chat", prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 } },
      ],
    },
    async (t) => {
      const { key } = await t.newKey();
      const body = { model: MODEL, messages: [{ role: "user", content: "hi" }] };
      expect((await post(t, "/v1/chat/completions", body, key)).status).toBe(402);
    },
    "zona_billing_refused_total",
    { reason: "insufficient_credits" },
  ],
];

describe("refusals counted by the limiter or billing reason that made them", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it.each(CASES)("%s", async (_rule, config, traffic, series, labels) => {
    t = await startTestApp({ config });
    await traffic(t);
    expect((await scrape(t)).samples(series)).toEqual([{ labels, value: 1 }]);
  });
});
