import { request as httpRequest } from "node:http";
import type { CounterStore } from "../../src/limits/counter-store.ts";
import { readJson } from "../helpers/read-json.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { FakeText } from "./fake-text.ts";

/** The catalogue of the text tests: a plain, a vision and a local-model-server chat model, and the rest. */
export const TEXT_MODELS = [
  { id: "gemma3.8-27b", kind: "chat" },
  { id: "vision-27b", kind: "chat", vision: true },
  { id: "local-8b", kind: "chat", local_server: true },
  { id: "bge-m3", kind: "embedding" },
  { id: "bge-reranker-v2-m3", kind: "rerank" },
  { id: "tts-1", kind: "tts" },
];

/** A parsed answer of the app. */
export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  body: any;
  text: string;
}

/** The real app with the text routes over a fake text service, and one key. */
export interface TextApp {
  t: TestApp;
  fake: FakeText;
  key: string;
  /** POSTs a JSON body (or a raw string with its content type) with the key. */
  post(
    path: string,
    body: unknown,
    init?: { headers?: Record<string, string>; raw?: boolean },
  ): Promise<Answer>;
  close(): Promise<void>;
}

// The tests send hundreds of requests per key; the limits themselves are tested in test/limits.
const unlimitedCounters: CounterStore = {
  take: async (counters, now) => ({
    allowed: true,
    counters: counters.map(() => ({ count: 1, resetAt: now + 60_000 })),
  }),
  close: async () => {},
};

/** Starts the app with the text routes wired to a FakeText; every request is counted as the first of its minute. */
export async function startTextApp(models: Array<Record<string, unknown>> = TEXT_MODELS): Promise<TextApp> {
  const fake = new FakeText();
  const t = await startTestApp({
    config: { models },
    // The text routes read the text service per request: this app's answers come from the fake.
    extend: (app) => {
      app.services.text = fake;
    },
    counterStore: unlimitedCounters,
  });
  const { key } = await t.newKey();
  const post: TextApp["post"] = async (path, body, init = {}) => {
    const response = await t.fetch(path, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.raw ? {} : { "content-type": "application/json" }),
        ...init.headers,
      },
      body: init.raw ? (body as string) : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  };
  return { t, fake, key, post, close: () => t.close() };
}

/**
 * POSTs a JSON body over a connection of its own, waits for the first bytes of the answer (or until
 * `waitFor` says so), then drops the connection, as a client that goes away. (fetch is not used:
 * undici dials a spare connection after an abort, which would hold up the app's close.)
 */
export function postThenHangUp(
  url: string,
  key: string,
  path: string,
  body: unknown,
  waitFor: "first-bytes" | (() => boolean),
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    });
    req.on("error", () => {});
    req.on("response", (res) => {
      res.once("data", (chunk: Buffer) => {
        req.destroy();
        resolve(chunk.toString("utf8"));
      });
    });
    req.end(JSON.stringify(body), () => {
      if (waitFor === "first-bytes") return;
      const poll = setInterval(() => {
        if (!waitFor()) return;
        clearInterval(poll);
        req.destroy();
        resolve("");
      }, 5);
    });
    req.on("close", () => reject(new Error("closed before an answer")));
  });
}

/** The `data:` payloads of an SSE body, in order. */
export function sseEvents(text: string): string[] {
  return text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => block.slice("data: ".length));
}

/** A data URI of a few bytes with the given magic number and declared type. */
export function dataUri(magic: Buffer | string, declared = "image/png", size = 64): string {
  const head = typeof magic === "string" ? Buffer.from(magic, "latin1") : magic;
  const bytes = Buffer.concat([head, Buffer.alloc(Math.max(0, size - head.length), 7)]);
  return `data:${declared};base64,${bytes.toString("base64")}`;
}

export const MAGIC = {
  png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  jpeg: Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  gif: "GIF89a",
  webp: "RIFF\u0000\u0000\u0000\u0000WEBPVP8 ",
  bmp: "BM",
};

export { readJson };
