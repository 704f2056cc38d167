/**
 * `GET /v1/knowledge-bases` over real HTTP (spec "Summary (key API)", "Text generation parameters"
 * knowledge-base paragraph, "Rate limits"; payloads in docs/knowledge-bases.md): the key's account's
 * bases and the shared ones, each only once it has a ready document; never another account's private
 * base; not limited per endpoint but counted by the tier limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { readJson } from "../helpers/read-json.ts";
import { documentFixture, type KbStack, startKbStack } from "./kb-stack.ts";

// `fast` is the tier with a tiny tier limit; `slow` (the default) lets hundreds of calls through.
const TIERS = {
  slow: { multiplier: 1, requests_per_minute: 100_000 },
  fast: { multiplier: 4, requests_per_minute: 3 },
};

// biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
type Json = any;

describe('spec "Text generation parameters": GET /v1/knowledge-bases (key API) lists the account\'s and the shared bases that have a ready document', () => {
  let stack: KbStack;
  let alice: AppUserHandle;
  let bob: AppUserHandle;
  let aliceKey: string;
  const slugs: Record<string, string> = {};

  const list = async (key: string | undefined, tier?: string) => {
    const response = await stack.t.fetch("/v1/knowledge-bases", {
      headers: {
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
        ...(tier === undefined ? {} : { "x-service-tier": tier }),
      },
    });
    return { response, body: (await readJson(response)) as Json };
  };
  const ids = (body: Json): string[] => body.data.map((base: { id: string }) => base.id);
  const newBase = async (user: AppUserHandle, name: string, description?: string) => {
    const answer = await user.post("/rag/kb", { name, ...(description ? { description } : {}) });
    expect(answer.status).toBe(201);
    return ((await answer.json()) as { slug: string }).slug;
  };
  const ingestReady = async (user: AppUserHandle, slug: string, fixture: string, name = fixture) => {
    const document = await stack.ingest(user, slug, documentFixture(fixture), name);
    expect(document.status).toBe("ready");
  };

  beforeAll(async () => {
    stack = await startKbStack({ config: { tiers: TIERS } });
    [alice, bob] = await Promise.all([stack.user(), stack.user()]);
    aliceKey = (await stack.keyOf(alice.accountId)).key;
    slugs.nature = await newBase(alice, "Nature notes", "Lighthouses and glaciers");
    slugs.empty = await newBase(alice, "Empty base");
    slugs.scans = await newBase(alice, "Scans only");
    slugs.mixed = await newBase(alice, "Mixed documents");
    slugs.bobPrivate = await newBase(bob, "Bob private");
    slugs.bobShared = await newBase(bob, "Bob shared", "Shared with every key");
    slugs.bobSharedEmpty = await newBase(bob, "Bob shared but empty");
    await ingestReady(alice, slugs.nature, "two-pages.pdf");
    expect((await stack.ingest(alice, slugs.scans, documentFixture("scanned.pdf"), "scan.pdf")).status).toBe(
      "failed",
    );
    await ingestReady(alice, slugs.mixed, "notes.md");
    await ingestReady(alice, slugs.mixed, "notes.txt");
    expect((await stack.ingest(alice, slugs.mixed, documentFixture("truncated.pdf"), "cut.pdf")).status).toBe(
      "failed",
    );
    await ingestReady(bob, slugs.bobPrivate, "notes.md");
    await ingestReady(bob, slugs.bobShared, "notes.txt");
    for (const slug of [slugs.bobShared, slugs.bobSharedEmpty]) {
      expect((await stack.t.admin("POST", `/knowledge-bases/${slug}/share`)).status).toBe(200);
    }
  }, 60_000);
  afterAll(() => stack?.close());

  it("lists the key's account's ready bases and the shared ones; not an empty one, one with only a failed document, nor another account's private base", async () => {
    const { response, body } = await list(aliceKey);
    expect(response.status).toBe(200);
    expect(body.object).toBe("list");
    expect(new Set(ids(body))).toEqual(new Set([slugs.nature, slugs.mixed, slugs.bobShared]));
    expect(ids(body)).toHaveLength(3);
  });

  it('each base has the shape {id: slug, object: "knowledge_base", name, description, shared, documents (ready ones), created_at (Unix seconds)}', async () => {
    const { body } = await list(aliceKey);
    const byId = new Map<string, Json>(body.data.map((base: Json) => [base.id, base]));
    const appView = async (user: AppUserHandle, slug: string) =>
      (await (await user.fetch(`/rag/kb/${slug}`)).json()) as Json;
    const nature = await appView(alice, slugs.nature as string);
    expect(byId.get(slugs.nature as string)).toEqual({
      id: slugs.nature,
      object: "knowledge_base",
      name: "Nature notes",
      description: "Lighthouses and glaciers",
      shared: false,
      documents: 1,
      created_at: Math.floor(Date.parse(nature.created_at) / 1000),
    });
    expect(Object.keys(byId.get(slugs.nature as string))).toEqual([
      "id",
      "object",
      "name",
      "description",
      "shared",
      "documents",
      "created_at",
    ]);
    // Two ready documents and a failed one: the failed one is not counted.
    expect(byId.get(slugs.mixed as string)).toMatchObject({
      name: "Mixed documents",
      description: null,
      documents: 2,
    });
    const shared = await appView(bob, slugs.bobShared as string);
    expect(byId.get(slugs.bobShared as string)).toEqual({
      id: slugs.bobShared,
      object: "knowledge_base",
      name: "Bob shared",
      description: "Shared with every key",
      shared: true,
      documents: 1,
      created_at: Math.floor(Date.parse(shared.created_at) / 1000),
    });
  });

  it("a key of another account sees its own private base and the shared one, never Alice's; a key of an account without bases sees only the shared one", async () => {
    const bobKey = (await stack.keyOf(bob.accountId)).key;
    expect(new Set(ids((await list(bobKey)).body))).toEqual(new Set([slugs.bobPrivate, slugs.bobShared]));
    const carol = await stack.user();
    const carolKey = (await stack.keyOf(carol.accountId)).key;
    const { response, body } = await list(carolKey);
    expect(response.status).toBe(200);
    expect(ids(body)).toEqual([slugs.bobShared]);
  });

  it("no key, or an unknown key -> 401 invalid_api_key", async () => {
    for (const key of [undefined, "sk-zona-not-a-real-key"]) {
      const { response, body } = await list(key);
      expect(response.status).toBe(401);
      expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_api_key" });
    }
  });

  it("not limited per endpoint: 125 calls in a minute pass (above the 30 and 120 of the limited endpoints), without X-RateLimit headers and without counting on the shared counter", async () => {
    const { key } = await stack.keyOf(alice.accountId);
    for (let i = 0; i < 125; i++) {
      const { response } = await list(key);
      expect(response.status).toBe(200);
      expect(response.headers.get("x-ratelimit-limit")).toBeNull();
      expect(response.headers.get("x-ratelimit-remaining")).toBeNull();
    }
    const ask = await stack.t.fetch(`/v1/knowledge-bases/${slugs.nature}/ask`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ question: "Where do glaciers form?" }),
    });
    expect(ask.status).toBe(200);
    expect(ask.headers.get("x-ratelimit-limit")).toBe("30");
    expect(ask.headers.get("x-ratelimit-remaining")).toBe("29");
  });

  it("counted by the tier limit: with a tier of 3 requests a minute, the 4th is 429 rate_limit_exceeded with Retry-After", async () => {
    // The tier counter turns with the clock minute: an attempt that straddles one is tried again.
    for (let attempt = 0; ; attempt++) {
      const { key } = await stack.keyOf(alice.accountId);
      const minute = Math.floor(Date.now() / 60_000);
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof list>> | undefined;
      for (let i = 0; i < 4; i++) {
        last = await list(key, "fast");
        statuses.push(last.response.status);
      }
      if (Math.floor(Date.now() / 60_000) !== minute && attempt < 2) continue;
      expect(statuses).toEqual([200, 200, 200, 429]);
      const refused = last as Awaited<ReturnType<typeof list>>;
      expect(refused.body.error).toMatchObject({ type: "rate_limit_exceeded", code: "rate_limit_exceeded" });
      expect(Number(refused.response.headers.get("retry-after"))).toBeGreaterThan(0);
      // The same key in a tier with room still lists: each request is compared with its own tier.
      expect((await list(key)).response.status).toBe(200);
      break;
    }
  });

  // Last: the embedding machine fails for a moment, so the document stays queued (tried again in 15 s).
  it("a base whose only document is still queued or being read is not listed (and asking it is 409 knowledge_base_not_ready)", async () => {
    // A user of its own: Alice's uploads have used her app limit of 10 a minute.
    const dave = await stack.user();
    const daveKey = (await stack.keyOf(dave.accountId)).key;
    const slug = await newBase(dave, "Pending base");
    await stack.tei.setMode("error500");
    try {
      const embedsBefore = stack.tei.requestsTo("/embed").length;
      const uploaded = await stack.upload(dave, slug, documentFixture("notes.txt"), "notes.txt");
      expect(uploaded.status).toBe(202);
      const deadline = Date.now() + 10_000;
      while (stack.tei.requestsTo("/embed").length === embedsBefore) {
        if (Date.now() > deadline) throw new Error("the document was never sent to the embedding machine");
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const documents = (await (await dave.fetch(`/rag/kb/${slug}/docs`)).json()) as Json;
      expect(["queued", "processing"]).toContain(documents.data[0].status);
      expect(ids((await list(daveKey)).body)).toEqual([slugs.bobShared]);
      const ask = await stack.t.fetch(`/v1/knowledge-bases/${slug}/ask`, {
        method: "POST",
        headers: { authorization: `Bearer ${daveKey}`, "content-type": "application/json" },
        body: JSON.stringify({ question: "Anything?" }),
      });
      expect(ask.status).toBe(409);
      expect((await readJson(ask)).error).toMatchObject({ code: "knowledge_base_not_ready" });
    } finally {
      await stack.tei.setMode("normal");
    }
  });
});
