import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHAT_MODEL, type EngineStack, postJson, startEngineStack } from "../e2e/engine-stack.ts";
import { readJson } from "../helpers/read-json.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";

// Money is held before a request is placed on a machine: a refused hold must leave nothing at any engine.
const CHAT = {
  path: "/v1/chat/completions",
  body: { model: CHAT_MODEL, messages: [{ role: "user", content: "Hi" }] },
};

const CASES: Array<{ name: string; path: string; body: Record<string, unknown> }> = [
  { name: "chat completion", ...CHAT },
  {
    name: "chat completion stream",
    path: "/v1/chat/completions",
    body: { model: CHAT_MODEL, messages: [{ role: "user", content: "Hi" }], stream: true },
  },
  { name: "completion", path: "/v1/completions", body: { model: CHAT_MODEL, prompt: "Say hi" } },
  {
    name: "completion stream",
    path: "/v1/completions",
    body: { model: CHAT_MODEL, prompt: "Say hi", stream: true },
  },
  { name: "embeddings", path: "/v1/embeddings", body: { model: "bge-m3", input: ["one", "two"] } },
];

describe.each(STORE_KINDS)("Money (%s): a refused request reaches no engine", (store) => {
  let stack: EngineStack;
  beforeAll(async () => {
    stack = await startEngineStack({ store });
  });
  afterAll(() => stack?.close());

  const sent = () =>
    stack.ti1.requests.length +
    stack.ti2.requests.length +
    stack.zh1.requests.length +
    stack.tei.requests.length;

  for (const c of CASES) {
    it(`spec Errors / 402 spending_limit_reached (${c.name}): nothing was sent to a model`, async () => {
      const { key } = await stack.t.newKey({ key: { monthly_limit: 0 } });
      const before = sent();
      const refused = await postJson(stack.t, key, c.path, c.body);
      expect(refused.status).toBe(402);
      expect((await readJson(refused)).error).toMatchObject({ code: "spending_limit_reached" });
      expect(sent()).toBe(before);
    });
  }

  it("spec Rate limits: a stopped request is not run (429 rate_limit_exceeded for a key that holds money, nothing sent to a model)", async () => {
    const { key } = await stack.t.newKey({ key: { monthly_limit: 100, requests_per_minute: 1 } });
    const answered = await postJson(stack.t, key, CHAT.path, CHAT.body);
    expect(answered.status).toBe(200);
    const before = sent();
    const limited = await postJson(stack.t, key, CHAT.path, CHAT.body);
    expect(limited.status).toBe(429);
    expect((await readJson(limited)).error).toMatchObject({ code: "rate_limit_exceeded" });
    expect(sent()).toBe(before);
  });
});
