import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { documentFixture, type KbStack, startKbStack } from "../knowledge/kb-stack.ts";

/** One request of the app API on a resource named by `{id}` (conversation or document) or `{slug}` (base). */
interface Probe {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  multipart?: boolean;
}

const CONVERSATION_PROBES: Probe[] = [
  { name: "read a conversation", method: "GET", path: "/chat/sessions/{id}" },
  { name: "rename it", method: "PATCH", path: "/chat/sessions/{id}", body: { title: "mine now" } },
  {
    name: "write to it",
    method: "POST",
    path: "/chat/sessions/{id}/messages",
    body: { content: "hi", model: "gemma3.8-27b" },
  },
  { name: "archive it (web chat)", method: "POST", path: "/web/chat/sessions/{id}/archive" },
  { name: "unarchive it (web chat)", method: "POST", path: "/web/chat/sessions/{id}/unarchive" },
  { name: "delete it", method: "DELETE", path: "/chat/sessions/{id}" },
];

const BASE_PROBES: Probe[] = [
  { name: "read a knowledge base", method: "GET", path: "/rag/kb/{slug}" },
  { name: "list its documents", method: "GET", path: "/rag/kb/{slug}/docs" },
  { name: "upload into it", method: "POST", path: "/rag/kb/{slug}/docs", multipart: true },
  { name: "delete one of its documents", method: "DELETE", path: "/rag/kb/{slug}/docs/{id}" },
  { name: "ask it", method: "POST", path: "/rag/kb/{slug}/chat", body: { question: "What is in it?" } },
  { name: "delete it", method: "DELETE", path: "/rag/kb/{slug}" },
];

/** The answer with the names of the resource taken out, so two answers can be compared. */
async function answerOf(user: AppUserHandle, probe: Probe, names: { id: string; slug: string }) {
  const path = probe.path.replace("{id}", names.id).replace("{slug}", names.slug);
  let response: Response;
  if (probe.multipart) {
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(documentFixture("notes.txt"))]), "notes.txt");
    response = await user.fetch(path, { method: probe.method, body: form });
  } else if (probe.body !== undefined) {
    response = await user.post(path, probe.body, probe.method);
  } else {
    response = await user.fetch(path, { method: probe.method });
  }
  const text = (await response.text()).split(names.id).join("<id>").split(names.slug).join("<slug>");
  return { status: response.status, type: response.headers.get("content-type"), body: text };
}

describe("Other people's data on the app API (OWASP API1:2023; spec App API errors: 404 for a conversation that is not the user's)", () => {
  let s: KbStack;
  let owner: AppUserHandle;
  let stranger: AppUserHandle;
  let conversationId: string;
  let slug: string;
  let documentId: string;

  beforeAll(async () => {
    s = await startKbStack();
    owner = await s.user();
    stranger = await s.user();
    const created = await owner.post("/chat/sessions", { title: "Private plans" });
    conversationId = ((await created.json()) as { id: string }).id;
    slug = await s.createBase(owner, "Private base");
    documentId = (await s.ingest(owner, slug, documentFixture("notes.txt"), "notes.txt")).id;
  }, 60_000);
  afterAll(() => s?.close());

  it.each(
    CONVERSATION_PROBES,
  )("$name: another user gets exactly the answer of a conversation that never existed, and the owner's is untouched", async (probe) => {
    const theirs = await answerOf(stranger, probe, { id: conversationId, slug });
    const missing = await answerOf(stranger, probe, { id: randomUUID(), slug });
    expect(theirs.status).toBe(404);
    expect(theirs).toEqual({ ...missing, body: theirs.body });
    expect(theirs.body.replace(/req_[0-9a-f]+/g, "")).toBe(missing.body.replace(/req_[0-9a-f]+/g, ""));
    const kept = await owner.fetch(`/chat/sessions/${conversationId}`);
    expect(kept.status).toBe(200);
    const conversation = (await kept.json()) as { title: string; messages: unknown[] };
    expect(conversation.title).toBe("Private plans");
    expect(conversation.messages).toEqual([]);
  });

  it.each(
    BASE_PROBES,
  )("$name: another user gets exactly the answer of a base that never existed, and the owner's base and document are untouched", async (probe) => {
    const theirs = await answerOf(stranger, probe, { id: documentId, slug });
    const missing = await answerOf(stranger, probe, {
      id: documentId,
      slug: `no-such-base-${randomUUID().slice(0, 8)}`,
    });
    expect(theirs.status).toBe(404);
    expect(theirs.status).toBe(missing.status);
    expect(theirs.type).toBe(missing.type);
    expect(theirs.body.replace(/req_[0-9a-f]+/g, "")).toBe(missing.body.replace(/req_[0-9a-f]+/g, ""));
    const documents = await owner.fetch(`/rag/kb/${slug}/docs`);
    expect(documents.status).toBe(200);
    const listed = (await documents.json()) as { data: Array<{ id: string; status: string }> };
    expect(listed.data.map((document) => [document.id, document.status])).toEqual([[documentId, "ready"]]);
  });

  it("the lists of the other user show nothing of the owner's (GET /chat/sessions, archived, /rag/kb)", async () => {
    expect(await (await stranger.fetch("/chat/sessions")).json()).toEqual([]);
    expect(await (await stranger.fetch("/web/chat/sessions/archived")).json()).toEqual({ data: [] });
    const bases = (await (await stranger.fetch("/rag/kb")).json()) as { data: Array<{ slug: string }> };
    expect(bases.data.map((base) => base.slug)).not.toContain(slug);
  });
});
