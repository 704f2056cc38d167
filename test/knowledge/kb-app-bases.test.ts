/**
 * The app API's knowledge bases over real HTTP (docs/knowledge-bases.md "App API"): creating,
 * listing, reading and deleting bases, isolation between accounts, the operator's shared bases,
 * authentication, and the per-user limit of `POST /rag/kb`.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kbDocuments, kbPassages } from "../../src/store/schema.ts";
import { type AppUserHandle, signedInUser } from "../app/app-helpers.ts";
import { readEvents } from "../app/chat-stack.ts";
import { documentFixture, type KbStack, startKbStack } from "./kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are checked by assertions, not by types.
type Json = any;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const NOT_FOUND = { message: "Knowledge base not found." };

let s: KbStack;
beforeAll(async () => {
  s = await startKbStack();
});
afterAll(() => s.close());

async function json(response: Response): Promise<{ status: number; body: Json }> {
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function create(user: AppUserHandle, body: unknown) {
  return json(await user.post("/rag/kb", body));
}

async function listOf(user: AppUserHandle): Promise<Json[]> {
  const answer = await json(await user.fetch("/rag/kb"));
  expect(answer.status).toBe(200);
  return answer.body.data;
}

/** The user's own bases (a base the operator shared shows in every list). */
async function ownOf(user: AppUserHandle): Promise<Json[]> {
  return (await listOf(user)).filter((base) => base.owned);
}

async function passagesOf(documentId: string): Promise<number> {
  return (await s.t.store.db.select().from(kbPassages).where(eq(kbPassages.documentId, documentId))).length;
}

/** A user with a base holding one ready document (notes.txt). */
async function baseWithDocument(name: string) {
  const owner = await s.user();
  const slug = await s.createBase(owner, name);
  const document = await s.ingest(owner, slug, documentFixture("notes.txt"), "notes.txt");
  expect(document.status).toBe("ready");
  return { owner, slug, document };
}

describe("App API: POST /rag/kb", () => {
  it.each([
    ["Rapporti 2025", "rapporti-2025"],
    ["Été à Zürich", "ete-a-zurich"],
    ["  Crème   brûlée & Co.  ", "creme-brulee-co"],
    ["Rapporti 2025 – Ticino", "rapporti-2025-ticino"],
    ["日本語", "kb"],
  ])("201 base; the slug of %j is %j (accents dropped, spaces and signs a dash)", async (name, slug) => {
    const user = await s.user();
    const answer = await create(user, { name });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({
      slug,
      name: name.trim(),
      description: null,
      shared: false,
      owned: true,
      documents: 0,
      ready_documents: 0,
      created_at: expect.stringMatching(ISO),
    });
  });

  it("a description is kept; a name of 128 characters and a description of 1,000 are taken (counted as characters)", async () => {
    const user = await s.user();
    const answer = await create(user, { name: "🌊".repeat(128), description: "é".repeat(1000) });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ name: "🌊".repeat(128), description: "é".repeat(1000) });
  });

  it("a long name gives a slug of 56 characters, so that with the ending of a taken one it stays within 63", async () => {
    const user = await s.user();
    const name = `${"a".repeat(64)} ${"b".repeat(63)}`;
    expect((await create(user, { name })).body.slug).toBe("a".repeat(56));
    const again = await create(user, { name });
    expect(again.body.slug).toMatch(/^a{56}-[0-9a-f]{6}$/);
    expect((await json(await user.fetch(`/rag/kb/${again.body.slug}`))).status).toBe(200);
  });

  it("a taken slug gets a short ending; the first base is untouched", async () => {
    const first = await s.user();
    const second = await s.user();
    const a = await create(first, { name: "Field notes" });
    const b = await create(second, { name: "Field Notes" });
    const c = await create(first, { name: "field notes" });
    expect(a.body.slug).toBe("field-notes");
    expect(b.body.slug).toMatch(/^field-notes-[0-9a-f]{6}$/);
    expect(c.body.slug).toMatch(/^field-notes-[0-9a-f]{6}$/);
    expect(c.body.slug).not.toBe(b.body.slug);
    expect((await json(await first.fetch("/rag/kb/field-notes"))).body).toMatchObject({
      name: "Field notes",
    });
    expect((await json(await second.fetch(`/rag/kb/${b.body.slug}`))).body).toMatchObject({
      name: "Field Notes",
      owned: true,
    });
  });

  it.each([
    ["no name", {}, ["name"]],
    ["an empty name", { name: "" }, ["name"]],
    ["a blank name", { name: "   " }, ["name"]],
    ["a name that is a number", { name: 42 }, ["name"]],
    ["a name of 129 characters", { name: "x".repeat(129) }, ["name"]],
    ["a description of 1,001 characters", { name: "ok", description: "d".repeat(1001) }, ["description"]],
    ["a description that is a number", { name: "ok", description: 7 }, ["description"]],
    ["both too long", { name: "x".repeat(129), description: "d".repeat(1001) }, ["name", "description"]],
  ])("%s: 422 validation_error listing %j in errors", async (_label, body, fields) => {
    const user = await s.user();
    const answer = await create(user, body);
    expect(answer.status).toBe(422);
    expect(answer.body).toEqual({
      message: expect.any(String),
      error: { code: "validation_error", message: answer.body.message },
      errors: Object.fromEntries(fields.map((field) => [field, [expect.any(String)]])),
    });
    expect(await ownOf(user)).toEqual([]);
  });
});

describe("App API: GET /rag/kb", () => {
  it("the user's bases and the operator's shared ones (owned false), newest first; not another account's private ones", async () => {
    const user = await s.user();
    const other = await s.user();
    const older = await create(user, { name: "List older" });
    const othersShared = await create(other, { name: "List shared of another" });
    const othersPrivate = await create(other, { name: "List private of another" });
    const newer = await create(user, { name: "List newer" });
    expect((await listOf(user)).map((base) => base.slug)).toEqual([newer.body.slug, older.body.slug]);

    const shared = await s.t.admin("POST", `/knowledge-bases/${othersShared.body.slug}/share`);
    expect(shared.status).toBe(200);
    const list = await listOf(user);
    expect(list.map((base) => base.slug)).toEqual([newer.body.slug, othersShared.body.slug, older.body.slug]);
    expect(list[1]).toEqual({ ...othersShared.body, shared: true, owned: false });
    expect(list.map((base) => base.slug)).not.toContain(othersPrivate.body.slug);
    // The owner sees it as its own, shared.
    expect((await listOf(other)).find((base) => base.slug === othersShared.body.slug)).toMatchObject({
      shared: true,
      owned: true,
    });

    await s.t.admin("POST", `/knowledge-bases/${othersShared.body.slug}/unshare`);
    expect((await listOf(user)).map((base) => base.slug)).toEqual([newer.body.slug, older.body.slug]);
  });
});

describe("App API: GET /rag/kb/{slug} and DELETE /rag/kb/{slug}", () => {
  it("GET: the base with its counts and `documents_list`", async () => {
    const { owner, slug, document } = await baseWithDocument("Get with documents");
    const answer = await json(await owner.fetch(`/rag/kb/${slug}`));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      slug,
      name: "Get with documents",
      description: null,
      shared: false,
      owned: true,
      documents: 1,
      ready_documents: 1,
      created_at: expect.stringMatching(ISO),
      documents_list: [document],
    });
  });

  it("DELETE: 204 without a body; its documents and passages are gone; then 404 {message} everywhere", async () => {
    const { owner, slug, document } = await baseWithDocument("Deleted with documents");
    expect(await passagesOf(document.id)).toBeGreaterThan(0);
    const deleted = await owner.fetch(`/rag/kb/${slug}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    expect(await passagesOf(document.id)).toBe(0);
    expect(await s.t.store.db.select().from(kbDocuments).where(eq(kbDocuments.id, document.id))).toEqual([]);
    for (const [method, path] of [
      ["GET", ""],
      ["DELETE", ""],
      ["GET", "/docs"],
    ]) {
      expect(await json(await owner.fetch(`/rag/kb/${slug}${path}`, { method }))).toEqual({
        status: 404,
        body: NOT_FOUND,
      });
    }
    expect(await ownOf(owner)).toEqual([]);
  });
});

type Call = (user: AppUserHandle, slug: string, documentId: string) => Promise<Response>;
const CALLS: Array<[string, Call]> = [
  ["GET /rag/kb/{slug}", (user, slug) => user.fetch(`/rag/kb/${slug}`)],
  ["DELETE /rag/kb/{slug}", (user, slug) => user.fetch(`/rag/kb/${slug}`, { method: "DELETE" })],
  ["GET /rag/kb/{slug}/docs", (user, slug) => user.fetch(`/rag/kb/${slug}/docs`)],
  ["POST /rag/kb/{slug}/docs", (user, slug) => s.upload(user, slug, documentFixture("notes.md"), "notes.md")],
  [
    "DELETE /rag/kb/{slug}/docs/{id}",
    (user, slug, id) => user.fetch(`/rag/kb/${slug}/docs/${id}`, { method: "DELETE" }),
  ],
  ["POST /rag/kb/{slug}/chat", (user, slug) => user.post(`/rag/kb/${slug}/chat`, { question: "Bread?" })],
];

describe('spec "App API errors" 404: another account\'s private base is 404 exactly like a missing one', () => {
  let owner: AppUserHandle;
  let stranger: AppUserHandle;
  let slug: string;
  let document: { id: string };
  beforeAll(async () => {
    ({ owner, slug, document } = await baseWithDocument("Private of its owner"));
    stranger = await s.user();
  });

  it.each(CALLS)("%s", async (_name, call) => {
    const missing = await json(await call(stranger, "no-such-base", document.id));
    const private_ = await json(await call(stranger, slug, document.id));
    expect(missing).toEqual({ status: 404, body: NOT_FOUND });
    expect(private_).toEqual(missing);
    // Nothing changed for the owner.
    const mine = await json(await owner.fetch(`/rag/kb/${slug}`));
    expect(mine.body).toMatchObject({ documents: 1, ready_documents: 1 });
    expect(mine.body.documents_list.map((item: { id: string }) => item.id)).toEqual([document.id]);
  });
});

describe("App API: a base the operator shared can be read and asked by others, not changed", () => {
  let owner: AppUserHandle;
  let reader: AppUserHandle;
  let slug: string;
  let document: Json;
  beforeAll(async () => {
    ({ owner, slug, document } = await baseWithDocument("Shared by the operator"));
    expect((await s.t.admin("POST", `/knowledge-bases/${slug}/share`)).status).toBe(200);
    reader = await s.user();
  });

  it("GET the base (owned false, with documents_list) and its documents", async () => {
    const base = await json(await reader.fetch(`/rag/kb/${slug}`));
    expect(base.status).toBe(200);
    expect(base.body).toMatchObject({ slug, shared: true, owned: false, documents_list: [document] });
    expect(await json(await reader.fetch(`/rag/kb/${slug}/docs`))).toEqual({
      status: 200,
      body: { data: [document] },
    });
  });

  it("POST chat: answered from the owner's passages", async () => {
    const response = await reader.post(`/rag/kb/${slug}/chat`, { question: "How long does bread bake?" });
    expect(response.status).toBe(200);
    const events = await readEvents(response);
    expect(events[0]?.sources[0]).toMatchObject({ document: "notes.txt", document_id: document.id });
    expect(events.at(-1)).toMatchObject({ type: "done", outcome: "ok" });
  });

  it.each(
    CALLS.filter(([name]) => name.startsWith("DELETE") || name === "POST /rag/kb/{slug}/docs"),
  )("%s: 404 like a missing base; nothing changes", async (_name, call) => {
    const missing = await json(await call(reader, "no-such-base", document.id));
    expect(await json(await call(reader, slug, document.id))).toEqual(missing);
    const mine = await json(await owner.fetch(`/rag/kb/${slug}`));
    expect(mine.body.documents_list).toEqual([document]);
  });
});

describe("Authentication: the knowledge-base routes need a signed-in user with a verified email", () => {
  const ROUTES: Array<[string, string]> = [
    ["GET", "/rag/kb"],
    ["POST", "/rag/kb"],
    ["GET", "/rag/kb/some-base"],
    ["DELETE", "/rag/kb/some-base"],
    ["GET", "/rag/kb/some-base/docs"],
    ["POST", "/rag/kb/some-base/docs"],
    ["DELETE", "/rag/kb/some-base/docs/0b9c2f6e-0000-4000-8000-000000000000"],
    ["POST", "/rag/kb/some-base/chat"],
  ];

  it.each(
    ROUTES,
  )("%s %s: no token 401 unauthorized, an API key 401, unverified 403 email_unverified", async (method, path) => {
    const none = await json(await s.t.fetch(`/api/v1${path}`, { method }));
    expect(none).toEqual({
      status: 401,
      body: { error: { code: "unauthorized", message: expect.any(String) } },
    });
    const { key } = await s.t.newKey();
    const withKey = await s.t.fetch(`/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${key}` },
    });
    expect(withKey.status).toBe(401);
    const unverified = await signedInUser(s.t, { verified: false });
    expect(await json(await unverified.fetch(path, { method }))).toEqual({
      status: 403,
      body: { error: { code: "email_unverified", message: expect.any(String) } },
    });
  });
});

describe('spec "Rate limits": POST /rag/kb, 30 per minute per user, on the user counter shared with docs (10) and chat (30)', () => {
  it("the 31st is 429 `Too Many Attempts.` with Retry-After; uploads were refused from the 11th call on; another user is free", async () => {
    const user = await s.user();
    for (let i = 1; i <= 30; i++) {
      const answer = await user.post("/rag/kb", { name: `Limited ${i}` });
      expect(answer.status).toBe(201);
      expect(answer.headers.get("x-ratelimit-limit")).toBe("30");
      expect(answer.headers.get("x-ratelimit-remaining")).toBe(String(30 - i));
    }
    const refused = await user.post("/rag/kb", { name: "Limited 31" });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await ownOf(user)).toHaveLength(30);
    // The same counter: uploads (10) and questions (30) are refused too.
    expect((await s.upload(user, "limited-1", documentFixture("notes.txt"), "notes.txt")).status).toBe(429);
    expect((await user.post("/rag/kb/limited-1/chat", { question: "Bread?" })).status).toBe(429);
    // Reading is not limited.
    expect((await user.fetch("/rag/kb/limited-1")).status).toBe(200);
    expect((await create(await s.user(), { name: "Not limited" })).status).toBe(201);
  });
});
