import { FakeOllamaServer, FakeOpenAiServer, FakeTeiServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import type { STORE_KINDS } from "../helpers/test-store.ts";

/** The whole service over fake engines: two Ticino machines, one in Zurich, Ollama and TEI. */
export interface EngineStack {
  t: TestApp;
  ti1: FakeOpenAiServer;
  ti2: FakeOpenAiServer;
  zh1: FakeOpenAiServer;
  ollama: FakeOllamaServer;
  tei: FakeTeiServer;
  close(): Promise<void>;
}

/** Chat model prices: 1 per million input tokens, 2 per million output tokens. */
export const CHAT_MODEL = "gemma3.8-27b";
export const LOCAL_MODEL = "gemma3.2-4b";

export async function startEngineStack(
  options: {
    store?: (typeof STORE_KINDS)[number];
    config?: Record<string, unknown>;
    chunkDelayMs?: number;
  } = {},
): Promise<EngineStack> {
  const ti1 = new FakeOpenAiServer({ chunkDelayMs: options.chunkDelayMs ?? 0 });
  const ti2 = new FakeOpenAiServer({ chunkDelayMs: options.chunkDelayMs ?? 0 });
  const zh1 = new FakeOpenAiServer({ chunkDelayMs: options.chunkDelayMs ?? 0 });
  const ollama = new FakeOllamaServer();
  const tei = new FakeTeiServer();
  const [a, b, c, o, e] = await Promise.all([
    ti1.start(),
    ti2.start(),
    zh1.start(),
    ollama.start(),
    tei.start(),
  ]);
  const t = await startTestApp({
    ...(options.store ? { store: options.store } : {}),
    config: {
      installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }] },
      tiers: {
        slow: { multiplier: 1, requests_per_minute: 100_000 },
        fast: { multiplier: 4, requests_per_minute: 100_000 },
      },
      models: [
        {
          id: CHAT_MODEL,
          kind: "chat",
          prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 },
        },
        { id: LOCAL_MODEL, kind: "chat", local_server: true },
        { id: "bge-m3", kind: "embedding", prices: { input_per_million_tokens: 0.1 } },
        { id: "bge-reranker-v2-m3", kind: "rerank" },
      ],
      machines: [
        { name: "ti-1", zone: "ch-ti", protocol: "openai", url: a.url, models: [CHAT_MODEL] },
        { name: "ti-2", zone: "ch-ti", protocol: "openai", url: b.url, models: [CHAT_MODEL] },
        { name: "zh-1", zone: "ch-zh", protocol: "openai", url: c.url, models: [CHAT_MODEL] },
        { name: "ti-ollama", zone: "ch-ti", protocol: "ollama", url: o.url, models: [LOCAL_MODEL] },
        {
          name: "zh-tei",
          zone: "ch-zh",
          protocol: "tei",
          url: e.url,
          models: ["bge-m3", "bge-reranker-v2-m3"],
        },
      ],
      ...options.config,
    },
  });
  return {
    t,
    ti1,
    ti2,
    zh1,
    ollama,
    tei,
    async close() {
      await t.close();
      await Promise.all([a.close(), b.close(), c.close(), o.close(), e.close()]);
    },
  };
}

/** POSTs JSON with a key. */
export function postJson(
  t: TestApp,
  key: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return t.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** Waits until the usage records of a key number `count` (settlement may end just after the answer). */
export async function usageOf(t: TestApp, keyId: string, count: number) {
  // biome-ignore lint/suspicious/noExplicitAny: assertions check the records' shape
  let records: any[] = [];
  for (let i = 0; i < 100; i++) {
    records = (await t.admin("GET", `/usage?key_id=${keyId}`)).body.data;
    if (records.length >= count) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return records;
}
