import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedInUser } from "../app/app-helpers.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

// The spec's own limits (no endpoint_limits override), counted before the request is read: a
// request refused for its fields still counts, so no engine is needed.
let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startTestApp({ config: { tiers: { slow: { multiplier: 1, requests_per_minute: 10_000 } } } });
  ({ key } = await t.newKey());
});
afterAll(() => t.close());

const post = (path: string, auth: string, body = "{}") =>
  t.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" },
    body,
  });

describe("Rate limits: the audio endpoints of the key API (per key, shared counter)", () => {
  it("POST /v1/audio/transcriptions allows 30 a minute, then 429 Too Many Attempts.; speech (120) still has room", async () => {
    const first = await post("/v1/audio/transcriptions", key);
    expect(first.headers.get("x-ratelimit-limit")).toBe("30");
    expect(first.headers.get("x-ratelimit-remaining")).toBe("29");
    for (let i = 1; i < 30; i++) await post("/v1/audio/transcriptions", key);
    const refused = await post("/v1/audio/transcriptions", key);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    // The refused request was not counted: the shared counter is at 30; speech, the 31st, compares it with its own 120.
    const speech = await post("/v1/audio/speech", key);
    expect(speech.status).toBe(400);
    expect(speech.headers.get("x-ratelimit-limit")).toBe("120");
    expect(speech.headers.get("x-ratelimit-remaining")).toBe("89");
  });
});

describe("Rate limits: the app audio endpoints (per user, one counter)", () => {
  it("transcribe counts toward 30, synthesize toward 60, voices is not limited", async () => {
    const user = await signedInUser(t);
    const transcribe = await user.post("/audio/transcribe", {});
    expect(transcribe.headers.get("x-ratelimit-limit")).toBe("30");
    const synthesize = await user.post("/audio/synthesize", {});
    expect(synthesize.headers.get("x-ratelimit-limit")).toBe("60");
    expect(synthesize.headers.get("x-ratelimit-remaining")).toBe("58");
    for (let i = 0; i < 70; i++) {
      const voices = await user.fetch("/audio/voices");
      expect(voices.status).toBe(200);
      expect(voices.headers.get("x-ratelimit-limit")).toBeNull();
    }
  });
});
