import { readFileSync } from "node:fs";
import type { Store } from "../../src/store/database.ts";
import { type AppUserHandle, signedInUser } from "../app/app-helpers.ts";
import { FakeOpenAiServer, FakeTeiServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import type { STORE_KINDS } from "../helpers/test-store.ts";

const FIXTURES = new URL("../fixtures/documents/", import.meta.url);

/** A fixture of test/fixtures/documents. */
export function documentFixture(name: string): Buffer {
  return readFileSync(new URL(name, FIXTURES));
}

/** The knowledge-base tests' installation: one zone, a TEI machine (bge-m3 + reranker) and a chat machine. */
export interface KbStack {
  t: TestApp;
  /** Embeddings by words (`wordEmbeddings`), so a question finds the passage that answers it. */
  tei: FakeTeiServer;
  chat: FakeOpenAiServer;
  /** A new signed-in user with a verified email (its own account). */
  user(): Promise<AppUserHandle>;
  /** A key of an account. */
  keyOf(accountId: string, key?: Record<string, unknown>): Promise<{ key: string; keyId: string }>;
  /** Creates a base for a user; returns its slug. */
  createBase(user: AppUserHandle, name?: string): Promise<string>;
  /** Uploads a document as multipart `file`; returns the response. */
  upload(user: AppUserHandle, slug: string, bytes: Buffer, filename: string): Promise<Response>;
  /** Uploads and waits until the document is ready or failed; returns the document. */
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  ingest(user: AppUserHandle, slug: string, bytes: Buffer, filename: string): Promise<any>;
  close(): Promise<void>;
}

/** Options of a knowledge-base stack. */
export interface KbStackOptions {
  store?: (typeof STORE_KINDS)[number] | Store;
  config?: Record<string, unknown>;
  /** Leave out the rerank model (retrieval order stands). */
  withoutRerank?: boolean;
  /** Fakes to reuse (a restarted app in front of the same machines). */
  fakes?: { tei: FakeTeiServer; chat: FakeOpenAiServer };
}

/** Starts the fakes (unless given) and the app. */
export async function startKbStack(options: KbStackOptions = {}): Promise<KbStack> {
  const own = options.fakes === undefined;
  const tei = options.fakes?.tei ?? new FakeTeiServer({ wordEmbeddings: true });
  const chat = options.fakes?.chat ?? new FakeOpenAiServer();
  if (own) await Promise.all([tei.start(), chat.start()]);
  const t = await startTestApp({
    ...(options.store ? { store: options.store } : {}),
    config: {
      installation: { zones: [{ id: "ch-ti" }] },
      tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
      models: [
        {
          id: "gemma3.8-27b",
          kind: "chat",
          prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 },
        },
        { id: "small-chat", kind: "chat" },
        { id: "bge-m3", kind: "embedding" },
        ...(options.withoutRerank ? [] : [{ id: "bge-reranker-v2-m3", kind: "rerank" }]),
      ],
      machines: [
        {
          name: "tei",
          zone: "ch-ti",
          protocol: "tei",
          url: tei.url,
          models: ["bge-m3", ...(options.withoutRerank ? [] : ["bge-reranker-v2-m3"])],
        },
        {
          name: "chat",
          zone: "ch-ti",
          protocol: "openai",
          url: chat.url,
          models: ["gemma3.8-27b", "small-chat"],
        },
      ],
      ...options.config,
    },
  });
  const stack: KbStack = {
    t,
    tei,
    chat,
    user: () => signedInUser(t),
    async keyOf(accountId, key = {}) {
      const answer = await t.admin("POST", `/accounts/${accountId}/keys`, { name: "kb", ...key });
      if (answer.status !== 201) throw new Error(`key: ${JSON.stringify(answer.body)}`);
      return { key: answer.body.key, keyId: answer.body.id };
    },
    async createBase(user, name = "Nature notes") {
      const answer = await user.post("/rag/kb", { name });
      if (answer.status !== 201) throw new Error(`base: ${answer.status} ${await answer.text()}`);
      return ((await answer.json()) as { slug: string }).slug;
    },
    upload(user, slug, bytes, filename) {
      const form = new FormData();
      form.append("file", new Blob([new Uint8Array(bytes)]), filename);
      return user.fetch(`/rag/kb/${slug}/docs`, { method: "POST", body: form });
    },
    async ingest(user, slug, bytes, filename) {
      const uploaded = await stack.upload(user, slug, bytes, filename);
      if (uploaded.status !== 202) throw new Error(`upload: ${uploaded.status} ${await uploaded.text()}`);
      const { id } = (await uploaded.json()) as { id: string };
      const deadline = Date.now() + 20_000;
      for (;;) {
        const list = (await (await user.fetch(`/rag/kb/${slug}/docs`)).json()) as {
          data: Array<{ id: string; status: string }>;
        };
        const document = list.data.find((item) => item.id === id);
        if (document && (document.status === "ready" || document.status === "failed")) return document;
        if (Date.now() > deadline) throw new Error(`document ${id} still ${document?.status}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async close() {
      await t.close();
      if (own) await Promise.all([tei.close(), chat.close()]);
    },
  };
  return stack;
}
