/**
 * docs/knowledge-bases.md "How a document becomes passages": the reading of a document is a job
 * of the durable queue (a table of the database in the embedded mode) that survives a restart. The
 * app is closed while the document is being embedded; a new app on the same database finishes it,
 * with one set of passages.
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/database.ts";
import { kbDocumentParts, kbDocuments, kbPassages } from "../../src/store/schema.ts";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { readEvents } from "../app/chat-stack.ts";
import { FakeOpenAiServer, FakeTeiServer } from "../fakes/index.ts";
import { EMBEDDED_FOLDER_TEST_MS } from "../helpers/embedded-folder-timeout.ts";
import type { TestApp } from "../helpers/test-app.ts";
import { openTestStore, STORE_KINDS } from "../helpers/test-store.ts";
import { documentFixture, type KbStack, startKbStack } from "./kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are checked by assertions, not by types.
type Json = any;

/** The same account, signed in on another app (the token signing secret is kept in the database). */
async function sameUser(t: TestApp, accountId: string): Promise<AppUserHandle> {
  const token = await t.app.services.appSessions.accessToken(accountId);
  const fetchApp = (path: string, init: RequestInit = {}) =>
    t.fetch(`/api/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) },
    });
  return {
    accountId,
    email: "",
    token,
    fetch: fetchApp,
    post: (path, body, method = "POST") =>
      fetchApp(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  };
}

async function documentOf(user: AppUserHandle, slug: string, id: string): Promise<Json> {
  const response = await user.fetch(`/rag/kb/${slug}/docs`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Array<{ id: string }> }).data.find((item) => item.id === id);
}

// Reading a document starts a process of its own: on a busy machine the first steps take 20 s.
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(STORE_KINDS)("Knowledge bases on %s: a restart while a document is read", {
  timeout: EMBEDDED_FOLDER_TEST_MS,
}, (kind) => {
  let store: Store;
  let tei: FakeTeiServer;
  let chat: FakeOpenAiServer;
  const stacks: KbStack[] = [];
  beforeAll(async () => {
    store = await openTestStore(kind);
    tei = new FakeTeiServer({ wordEmbeddings: true });
    chat = new FakeOpenAiServer();
    await Promise.all([tei.start(), chat.start()]);
  });
  afterAll(async () => {
    for (const stack of stacks) await stack.close();
    await Promise.all([tei.close(), chat.close()]);
    await store.close();
  });

  it("the document stays `processing` across the restart, then becomes ready on the new app with one set of passages", async () => {
    const first = await startKbStack({ store, fakes: { tei, chat } });
    stacks.push(first);
    const user = await first.user();
    const slug = await first.createBase(user, "Restarted");
    // The embedding machine takes the batch and never answers.
    await tei.setMode("hang");
    const uploaded = await first.upload(user, slug, documentFixture("two-pages.pdf"), "two-pages.pdf");
    expect(uploaded.status).toBe(202);
    const { id } = (await uploaded.json()) as { id: string };
    await until(
      () => documentOf(user, slug, id),
      (document) => document?.status === "processing",
      "processing",
    );
    await until(
      async () => tei.requestsTo("/embed").length,
      (count) => count > 0,
      "an embedding request",
    );

    const closing = Date.now();
    await first.close();
    stacks.pop();
    expect(Date.now() - closing).toBeLessThan(10_000);
    // Left to the next start: still being read, no passage written.
    const [left] = await store.db.select().from(kbDocuments).where(eq(kbDocuments.id, id));
    expect(left).toMatchObject({ status: "processing", passages: 0 });
    // The uploaded file is kept for the next start: in the embedded store's folder, or in the database.
    const parts = await store.db.select().from(kbDocumentParts).where(eq(kbDocumentParts.documentId, id));
    const kept =
      store.filesDir === undefined
        ? Buffer.concat(parts.map((part) => part.bytes))
        : await readFile(join(store.filesDir, id));
    expect(kept).toEqual(documentFixture("two-pages.pdf"));
    expect(await store.db.select().from(kbPassages).where(eq(kbPassages.documentId, id))).toEqual([]);
    await tei.setMode("normal");
    tei.clearRequests();

    const second = await startKbStack({ store, fakes: { tei, chat } });
    stacks.push(second);
    const again = await sameUser(second.t, user.accountId);
    const ready = await until(
      () => documentOf(again, slug, id),
      (document) => document?.status === "ready" || document?.status === "failed",
      "ready",
    );
    expect(ready).toMatchObject({ id, status: "ready", error: null, pages: 2, format: "pdf" });
    expect(ready.passages).toBeGreaterThan(0);
    const rows = await store.db.select().from(kbPassages).where(eq(kbPassages.documentId, id));
    expect(rows).toHaveLength(ready.passages);
    expect(new Set(rows.map((row) => row.ordinal)).size).toBe(rows.length);
    expect(tei.requestsTo("/embed").length).toBeGreaterThan(0);

    // Asked on the new app, the document answers.
    const response = await again.post(`/rag/kb/${slug}/chat`, { question: "How do glaciers form?" });
    expect(response.status).toBe(200);
    const events = await readEvents(response);
    expect(events[0]?.sources[0]).toMatchObject({ document_id: id, page: 2 });
    expect(events.at(-1)).toMatchObject({ type: "done", outcome: "ok" });
  });
});
