import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createModerationAdapter } from "../../../src/engines/adapters/moderation-adapter.ts";
import { fromModeration } from "../../../src/engines/adapters/moderation-transforms.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { ModerationEngine } from "../../../src/engines/modalities.ts";
import { DEFAULT_MODERATION_SETTINGS, FakeModerationServer, fakeMachine } from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeModerationServer();
let client: UpstreamClient;
let moderate: ModerationEngine["moderate"];
const signal = () => new AbortController().signal;
const machine = (models: string[] = []) => fakeMachine("moderation", fake.url, { models });

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300 });
  moderate = createModerationAdapter(client).moderation.moderate;
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal");
  fake.configure({ ...DEFAULT_MODERATION_SETTINGS, models: undefined });
  fake.clearRequests();
});

describe("moderation adapter", () => {
  const cases = [
    { input: "Leggi questa poesia.", flagged: false, categories: [] },
    { input: "A FORBIDDEN text.", flagged: true, categories: ["violence"] },
  ];
  for (const { input, flagged, categories } of cases) {
    it(`${flagged ? "flags" : "passes"} "${input}"`, async () => {
      expect(await moderate(machine(), input, signal())).toEqual({ flagged, categories });
      expect(fake.lastRequest.path).toBe("/v1/moderations");
      expect(fake.lastRequest.body).toEqual({ input });
    });
  }

  it("names every flagged category, and sends the machine's model when it lists one", async () => {
    fake.configure({ flagWord: "verboten", flagCategories: ["hate", "violence"], models: ["llama-guard"] });
    const verdict = await moderate(machine(["llama-guard"]), "Das ist verboten.", signal());
    expect(verdict).toEqual({ flagged: true, categories: ["hate", "violence"] });
    expect(fake.lastRequest.body).toEqual({ input: "Das ist verboten.", model: "llama-guard" });
  });

  it("maps an answer without results to protocol, and refuse, 500 and hang to their kinds", async () => {
    fake.configure({ malformed: true });
    expect((await failure(moderate(machine(), "x", signal()))).kind).toBe("protocol");
    fake.configure({ malformed: false });
    await fake.setMode("refuse");
    expect((await failure(moderate(machine(), "x", signal()))).kind).toBe("connect");
    await fake.setMode("error500");
    const status = await failure(moderate(machine(), "x", signal()));
    expect([status.kind, status.status]).toEqual(["status", 500]);
    await fake.setMode("hang");
    expect((await failure(moderate(machine(), "x", signal()))).kind).toBe("timeout");
  });
});

describe("fromModeration", () => {
  const malformed: Array<[string, unknown]> = [
    ["no results", { id: "m" }],
    ["empty results", { results: [] }],
    ["a result without flagged", { results: [{ categories: {} }] }],
    ["flagged that is not a boolean", { results: [{ flagged: "yes" }] }],
    ["a list", []],
    ["a string", "ok"],
  ];
  for (const [name, raw] of malformed) {
    it(`fails with protocol on ${name}`, () => {
      expect(() => fromModeration(raw)).toThrowError(expect.objectContaining({ kind: "protocol" }));
    });
  }

  it("reads a result without categories as flagged with none named", () => {
    expect(fromModeration({ results: [{ flagged: true }] })).toEqual({ flagged: true, categories: [] });
  });
});
