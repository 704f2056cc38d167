import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { type ImageStack, startImageStack } from "../images/image-stack.ts";
import { documentFixture, type KbStack, startKbStack } from "../knowledge/kb-stack.ts";
import { startVideoStack, type VideoStack } from "../videos/video-stack.ts";

/**
 * "other people's data" on the key API (OWASP API1:2023): with another account's key, a
 * knowledge base, a document, a video or a picture of the owner answers exactly like one that never
 * existed: the same status, content type, headers and body once the request id and the resource's
 * own names are taken out, and the owner's data is untouched.
 */

/** One request on a resource named by `{slug}` (a base or a video id) and `{id}` (a document or picture). */
interface Probe {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  multipart?: boolean;
}

/** Headers that differ from one request to the next by nature (time, request id, counters, length of a name). */
const VOLATILE = new Set(
  "date x-request-id x-ratelimit-remaining x-ratelimit-reset content-length connection keep-alive".split(" "),
);

/** What a client sees of an answer, with the names of the resource and the request id taken out. */
type Seen = { status: number; headers: Record<string, string>; body: string };

/** Requests made and statuses seen, printed with ISOLATION_REPORT=1 for docs/reliability.md. */
const tally = new Map<number, number>();
afterAll(() => {
  if (!process.env.ISOLATION_REPORT) return;
  const requests = [...tally.values()].reduce((sum, n) => sum + n, 0);
  console.info(
    `key-other-accounts: ${requests} compared requests, statuses ${JSON.stringify(Object.fromEntries(tally))}`,
  );
});

async function seen(response: Response, names: string[]): Promise<Seen> {
  tally.set(response.status, (tally.get(response.status) ?? 0) + 1);
  let body = (await response.text()).replace(/req_[0-9a-f]{32}/g, "<request>");
  for (const name of names) if (name !== "") body = body.split(name).join("<name>");
  const headers: Record<string, string> = {};
  for (const [header, value] of response.headers) if (!VOLATILE.has(header)) headers[header] = value;
  return { status: response.status, headers, body };
}

async function call(
  base: string,
  key: string | undefined,
  probe: Probe,
  names: { slug: string; id: string },
): Promise<Seen> {
  const path = probe.path.replaceAll("{slug}", names.slug).replaceAll("{id}", names.id);
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  let body: RequestInit["body"];
  if (probe.multipart) {
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(documentFixture("notes.txt"))]), "notes.txt");
    body = form;
  } else if (probe.body !== undefined) {
    headers["content-type"] = "application/json";
    body = typeof probe.body === "string" ? probe.body : JSON.stringify(probe.body);
  }
  const init: RequestInit = { method: probe.method, headers, ...(body ? { body } : {}) };
  return seen(await fetch(`${base}${path}`, init), [names.slug, names.id]);
}

/** A well-formed slug of the same length that no base has (so even the length of an answer cannot differ). */
const missingSlug = (like: string) => `m${randomBytes(like.length).toString("hex")}`.slice(0, like.length);

const ASK = "/v1/knowledge-bases/{slug}/ask";
const DOCS = "/v1/knowledge-bases/{slug}/documents";
const UPLOAD = Symbol("a multipart upload of notes.txt");
/** What a stranger might try on a base and its document; only `ask` exists on the key API. */
const KB_PROBES: Probe[] = (
  [
    ["ask it", "POST", ASK, { question: "What is in the notes?" }],
    ["ask it without a question", "POST", ASK, {}],
    ["ask it with top_k out of range", "POST", ASK, { question: "q", top_k: 99 }],
    ["ask it with an unknown model", "POST", ASK, { question: "q", model: "nope" }],
    ["ask it with a body that is no JSON", "POST", ASK, "{not json"],
    ["GET its ask path", "GET", ASK],
    ["read it", "GET", "/v1/knowledge-bases/{slug}"],
    ["delete it", "DELETE", "/v1/knowledge-bases/{slug}"],
    ["list its documents", "GET", DOCS],
    ["upload into it", "POST", DOCS, UPLOAD],
    ["delete its document", "DELETE", `${DOCS}/{id}`],
    ["search it", "POST", "/v1/knowledge-bases/{slug}/search", { query: "notes" }],
    ["search it as a vector store", "POST", "/v1/vector_stores/{slug}/search", { query: "notes" }],
    ["read its document as a file", "GET", "/v1/files/{id}"],
    ["download its document as a file", "GET", "/v1/files/{id}/content"],
    ["delete its document as a file", "DELETE", "/v1/files/{id}"],
    ["reach it through the app API's path", "GET", "/v1/rag/kb/{slug}"],
  ] as Array<[string, string, string, unknown?]>
).map(([name, method, path, body]) =>
  body === UPLOAD ? { name, method, path, multipart: true } : { name, method, path, body },
);

describe("Knowledge bases on the key API: another account's base or document answers like one that never existed (spec GET /v1/knowledge-bases, POST /v1/knowledge-bases/{slug}/ask)", () => {
  let s: KbStack;
  let owner: AppUserHandle;
  let stranger: AppUserHandle;
  let ownerKey: string;
  let ownerSecondKey: string;
  let strangerKey: string;
  let slug: string;
  let strangerSlug: string;
  let documentId: string;

  beforeAll(async () => {
    s = await startKbStack();
    owner = await s.user();
    stranger = await s.user();
    ownerKey = (await s.keyOf(owner.accountId)).key;
    ownerSecondKey = (await s.keyOf(owner.accountId)).key;
    strangerKey = (await s.keyOf(stranger.accountId)).key;
    slug = await s.createBase(owner, `Private plans ${randomBytes(3).toString("hex")}`);
    documentId = (await s.ingest(owner, slug, documentFixture("notes.txt"), "notes.txt")).id;
    strangerSlug = await s.createBase(stranger, "Stranger notes");
    await s.ingest(stranger, strangerSlug, documentFixture("notes.md"), "notes.md");
  }, 60_000);
  afterAll(() => s?.close());

  /** The owner's base and document as the owner sees them. */
  const ownersData = async () => {
    const listed = (await (await owner.fetch(`/rag/kb/${slug}/docs`)).json()) as {
      data: Array<{ id: string; status: string }>;
    };
    return listed.data.map((document) => [document.id, document.status]);
  };
  const listOf = async (key: string) => {
    const answer = await fetch(`${s.t.url}/v1/knowledge-bases`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return ((await answer.json()) as { data: Array<{ id: string; shared: boolean }> }).data;
  };
  const ask = (key: string, which: string) =>
    call(s.t.url, key, KB_PROBES[0] as Probe, { slug: which, id: "" });

  it.each(
    KB_PROBES,
  )("$name: the stranger's key gets exactly the answer of a base that never existed; the owner's data is untouched", async (probe) => {
    const theirs = await call(s.t.url, strangerKey, probe, { slug, id: documentId });
    const missing = await call(s.t.url, strangerKey, probe, { slug: missingSlug(slug), id: randomUUID() });
    expect(theirs.status).toBeGreaterThanOrEqual(400);
    expect(theirs).toEqual(missing);
    expect(await ownersData()).toEqual([[documentId, "ready"]]);
  });

  it("the same ask with the owner's keys is answered (200, naming the base): the probe reaches a real base", async () => {
    for (const key of [ownerKey, ownerSecondKey]) {
      const answer = await ask(key, slug);
      expect(answer.status).toBe(200);
      expect(answer.headers["x-zona"]).toBe("ch-ti");
      expect(JSON.parse(answer.body)).toMatchObject({ knowledge_base: "<name>" });
    }
  });

  it("GET /v1/knowledge-bases: the stranger's key lists only its own base; both keys of the owner's account list the owner's", async () => {
    expect((await listOf(strangerKey)).map((base) => base.id)).toEqual([strangerSlug]);
    for (const key of [ownerKey, ownerSecondKey])
      expect((await listOf(key)).map((base) => base.id)).toEqual([slug]);
  });

  it("two keys of one account share its bases but not their endpoint counter (spec: endpoint limits are per key)", async () => {
    const counted = async (key: string) => {
      const answer = await fetch(`${s.t.url}/v1/knowledge-bases/${slug}/ask`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ question: "What is in the notes?" }),
      });
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
      return {
        limit: Number(answer.headers.get("x-ratelimit-limit")),
        left: Number(answer.headers.get("x-ratelimit-remaining")),
      };
    };
    const first = await counted(ownerKey);
    expect((await counted(ownerKey)).left).toBe(first.left - 1);
    const fresh = await counted((await s.keyOf(owner.accountId)).key);
    expect(fresh).toEqual({ limit: 30, left: 29 });
  });

  it("a base the operator shares: every key may list and ask it, no other account may change it (app API upload, delete document, delete base answer like a missing base)", async () => {
    expect((await s.t.admin("POST", `/knowledge-bases/${slug}/share`)).status).toBe(200);
    try {
      expect((await listOf(strangerKey)).map((base) => [base.id, base.shared])).toContainEqual([slug, true]);
      expect((await ask(strangerKey, slug)).status).toBe(200);
      const writes: Probe[] = [
        { name: "upload", method: "POST", path: "/api/v1/rag/kb/{slug}/docs", multipart: true },
        { name: "delete a document", method: "DELETE", path: "/api/v1/rag/kb/{slug}/docs/{id}" },
        { name: "delete the base", method: "DELETE", path: "/api/v1/rag/kb/{slug}" },
      ];
      for (const probe of writes) {
        const theirs = await call(s.t.url, stranger.token, probe, { slug, id: documentId });
        const missing = await call(s.t.url, stranger.token, probe, {
          slug: missingSlug(slug),
          id: documentId,
        });
        expect(theirs.status, probe.name).toBe(404);
        expect(theirs, probe.name).toEqual(missing);
      }
      expect(await ownersData()).toEqual([[documentId, "ready"]]);
    } finally {
      expect((await s.t.admin("POST", `/knowledge-bases/${slug}/unshare`)).status).toBe(200);
    }
    expect(await ask(strangerKey, slug)).toEqual(await ask(strangerKey, missingSlug(slug)));
  });
});

describe("Image links (spec Images: a `url` works without a key, is signed, lasts 24 hours): a guessed or altered link answers the same whether the picture exists or not", () => {
  let s: ImageStack;
  let strangerKey: string;
  /** The owner's picture: its id and its whole signed link (path and query). */
  let ownerId: string;
  let ownerLink: string;
  /** The stranger's own valid expiry and signature: the best material a guesser has. */
  let strangerQuery: { expires: string; signature: string };
  let strangerLink: string;

  const linkOf = async (key: string) => {
    const answer = await s.generate({ prompt: "a lantern", response_format: "url" }, { key });
    expect(answer.status).toBe(200);
    const url = new URL(answer.body.data[0].url as string);
    return {
      id: /([0-9a-f-]{36})\.png$/.exec(url.pathname)?.[1] ?? "",
      link: `${url.pathname}${url.search}`,
      url,
    };
  };
  beforeAll(async () => {
    s = await startImageStack();
    strangerKey = (await s.t.newKey()).key;
    const owners = await linkOf(s.key);
    ownerId = owners.id;
    ownerLink = owners.link;
    const strangers = await linkOf(strangerKey);
    strangerLink = strangers.link;
    strangerQuery = {
      expires: strangers.url.searchParams.get("expires") ?? "",
      signature: strangers.url.searchParams.get("signature") ?? "",
    };
  }, 60_000);
  afterAll(() => s?.close());

  const FILE = "/v1/images/file/{id}";
  /** `{q}`: the stranger's own expiry and signature; `{e}`: its expiry only. */
  const GUESSES: Array<[string, string, ("stranger" | "owner")?]> = [
    ["the id with the stranger's own expiry and signature", `${FILE}.png?{q}`],
    ["the same, sent with the stranger's key", `${FILE}.png?{q}`, "stranger"],
    ["the same, sent with the owner's key (a key is no link)", `${FILE}.png?{q}`, "owner"],
    ["the id with no query", `${FILE}.png`],
    ["the id with an expiry only", `${FILE}.png?expires={e}`],
    [
      "the id with a made-up far expiry and signature",
      `${FILE}.png?expires=99999999999&signature=${"0".repeat(64)}`,
    ],
    ["the id without .png", `${FILE}?{q}`],
  ];

  it.each(GUESSES)("%s: 403 exactly as for an id no picture has", async (name, template, who) => {
    const query = `expires=${strangerQuery.expires}&signature=${strangerQuery.signature}`;
    const path = template.replace("{q}", query).replace("{e}", strangerQuery.expires);
    const key = who === "stranger" ? strangerKey : who === "owner" ? s.key : undefined;
    const theirs = await call(s.t.url, key, { name, method: "GET", path }, { slug: "", id: ownerId });
    const missing = await call(s.t.url, key, { name, method: "GET", path }, { slug: "", id: randomUUID() });
    expect(theirs.status).toBe(403);
    expect(theirs).toEqual(missing);
  });

  it("the link itself is the authority: the owner's link serves the picture with no key or any key; the stranger's own link works (so the guesses above used a real signature)", async () => {
    const bodies: string[] = [];
    for (const key of [undefined, strangerKey, "sk-not-a-key"]) {
      const answer = await fetch(
        `${s.t.url}${ownerLink}`,
        key ? { headers: { authorization: `Bearer ${key}` } } : {},
      );
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toBe("image/png");
      bodies.push(Buffer.from(await answer.arrayBuffer()).toString("base64"));
    }
    expect(new Set(bodies).size).toBe(1);
    expect((await fetch(`${s.t.url}${strangerLink}`)).status).toBe(200);
  });

  it.each([
    "/v1/images/file/",
    "/v1/images/file",
    "/v1/images",
    "/v1/images/generations",
  ])("GET %s with the stranger's key lists nothing: a 4xx that names no picture", async (path) => {
    const answer = await fetch(`${s.t.url}${path}`, { headers: { authorization: `Bearer ${strangerKey}` } });
    const text = await answer.text();
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    expect(text).not.toContain(ownerId);
  });
});

describe("Usage and keys: the key API has no endpoint where a key reads usage, keys or accounts, its own or another's (spec: how keys are issued is not shown)", () => {
  let s: ImageStack;
  let owner: { accountId: string; keyId: string; key: string };
  let stranger: { accountId: string; keyId: string; key: string };
  beforeAll(async () => {
    s = await startImageStack();
    owner = { accountId: "", keyId: s.keyId, key: s.key };
    owner.accountId = (await s.t.admin("GET", `/keys/${s.keyId}`)).body.account_id;
    stranger = await s.t.newKey();
    // A billed request, so there is usage to find.
    expect((await s.generate({ prompt: "a lantern" })).status).toBe(200);
  }, 60_000);
  afterAll(() => s?.close());

  const KEY_PATHS = [
    "/v1/usage",
    "/v1/usage?key_id={keyId}",
    "/v1/dashboard/billing/usage",
    "/v1/dashboard/billing/subscription",
    "/v1/organization/usage/completions",
    "/v1/organization/costs",
    "/v1/organization/api_keys",
    "/v1/keys",
    "/v1/keys/{keyId}",
    "/v1/api_keys",
    "/v1/me",
    "/v1/account",
    "/v1/accounts/{accountId}",
    "/v1/credits",
    "/v1/files",
  ];
  const fill = (path: string) =>
    path.replaceAll("{keyId}", owner.keyId).replaceAll("{accountId}", owner.accountId);

  it.each(
    KEY_PATHS,
  )("GET %s with either key: 404 unknown_endpoint, exactly like a path that never existed", async (template) => {
    const path = fill(template);
    const never = `/v1/no-such-${randomBytes(4).toString("hex")}`;
    for (const key of [stranger.key, owner.key]) {
      const probe = (p: string) => ({ name: p, method: "GET", path: p });
      const answer = await call(s.t.url, key, probe(path), { slug: path.split("?")[0] ?? path, id: "" });
      const baseline = await call(s.t.url, key, probe(never), { slug: never, id: "" });
      expect(answer.status).toBe(404);
      expect(answer).toEqual(baseline);
      expect(JSON.parse(answer.body).error.code).toBe("unknown_endpoint");
    }
  });

  const OPERATOR_PATHS = [
    "/admin/v1/usage?key_id={keyId}",
    "/admin/v1/usage/summary?key_id={keyId}",
    "/admin/v1/keys",
    "/admin/v1/keys/{keyId}",
    "/admin/v1/accounts/{accountId}",
    "/admin/v1/accounts/{accountId}/keys",
    "/admin/v1/accounts/{accountId}/credits",
    "/admin/v1/mail",
  ];

  it.each(
    OPERATOR_PATHS,
  )("GET %s with an API key (the owner's or another's) or a user token: 401, exactly like no credentials", async (template) => {
    const path = fill(template);
    const probe = { name: path, method: "GET", path };
    const names = { slug: owner.keyId, id: owner.accountId };
    const none = await call(s.t.url, undefined, probe, names);
    expect(none.status).toBe(401);
    const userToken = await s.t.app.services.appSessions.accessToken(owner.accountId);
    for (const credential of [owner.key, stranger.key, userToken]) {
      expect(await call(s.t.url, credential, probe, names)).toEqual(none);
    }
  });
});

describe("Video jobs (adds to test/videos/video-listing.test.ts): another account's job answers byte for byte like a missing one, headers included", () => {
  let s: VideoStack;
  let strangerKey: string;
  let id: string;
  beforeAll(async () => {
    s = await startVideoStack();
    strangerKey = (await s.t.newKey()).key;
    const created = await s.create({ prompt: "a lighthouse at dusk" });
    expect(created.status).toBe(200);
    id = created.body.id;
    expect((await s.waitFor(id)).status).toBe("completed");
  }, 60_000);
  afterAll(() => s?.close());

  it.each([
    { name: "read it", method: "GET", path: "/v1/videos/{slug}" },
    { name: "download it", method: "GET", path: "/v1/videos/{slug}/content" },
    { name: "delete it", method: "DELETE", path: "/v1/videos/{slug}" },
    { name: "page after it", method: "GET", path: "/v1/videos?after={slug}" },
  ])("$name", async (probe) => {
    const theirs = await call(s.t.url, strangerKey, probe, { slug: id, id: "" });
    const missing = await call(s.t.url, strangerKey, probe, {
      slug: `video_${randomBytes(16).toString("hex")}`,
      id: "",
    });
    expect(theirs).toEqual(missing);
    expect((await s.call("GET", `/v1/videos/${id}`)).body.status).toBe("completed");
  });
});
