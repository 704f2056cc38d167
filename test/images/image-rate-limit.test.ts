import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ImageStack, startImageStack } from "./image-stack.ts";

describe("Rate limits: POST /v1/images/generations, 30 per minute on its own counter", () => {
  let s: ImageStack;
  beforeAll(async () => {
    s = await startImageStack({ specEndpointLimit: true });
  });
  afterAll(() => s.close());

  const chat = (key: string) =>
    s.t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-1", messages: [{ role: "user", content: "hi" }] }),
    });

  it("the 31st request is 429 Too Many Attempts. while chat completions still pass; a minute later images pass again", async () => {
    const { key } = await s.t.newKey();
    for (let i = 1; i <= 30; i++) {
      const answer = await s.generate({ prompt: `a bird number ${i}` }, { key });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-ratelimit-limit")).toBe("30");
      expect(answer.headers.get("x-ratelimit-remaining")).toBe(String(30 - i));
    }
    const refused = await s.generate({ prompt: "one bird too many" }, { key });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: "Too Many Attempts." });
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("x-ratelimit-reset")).toMatch(/^\d+$/);
    // Chat counts on the shared counter, which the pictures never touched.
    const chatAnswer = await chat(key);
    expect(chatAnswer.status).toBe(200);
    expect(chatAnswer.headers.get("x-ratelimit-remaining")).toBe("59");
    const start = s.clock.at;
    try {
      s.clock.at = start + 61_000;
      expect((await s.generate({ prompt: "a bird next minute" }, { key })).status).toBe(200);
    } finally {
      s.clock.at = start;
    }
  });

  it("the counter is per key: another key still passes", async () => {
    const { key } = await s.t.newKey();
    expect((await s.generate({ prompt: "a fresh bird" }, { key })).status).toBe(200);
  });
});
