/**
 * The operator's knowledge bases over real HTTP (docs/knowledge-bases.md "Operator"): every base with
 * its owner and counts, sharing one with every key of the installation and taking it back, through
 * the operator API and the `zona kb` commands (HTTP mode, against the running test app).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { ADMIN_TOKEN } from "../helpers/test-app.ts";
import { documentFixture, type KbStack, startKbStack } from "./kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
type Json = any;

describe("Operator: every knowledge base, and sharing one with every key (API and zona kb)", () => {
  let stack: KbStack;
  let dir: string;
  let alice: AppUserHandle;
  let bob: AppUserHandle;
  let carol: AppUserHandle;
  let carolKey: string;
  let nature: string; // Alice's: a ready and a failed document
  let bobEmpty: string; // Bob's: no document

  async function zona(args: string[]) {
    let stdout = "";
    let stderr = "";
    const code = await runCli(args, {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (stderr += chunk) },
      stdin: Readable.from([]),
      // Were the command to open a database itself, it would be this empty one, and the tests would notice.
      env: { ZONA_URL: stack.t.url, ZONA_ADMIN_TOKEN: ADMIN_TOKEN, ZONA_DATA_DIR: join(dir, "data") },
      cwd: dir,
    });
    return { code, stdout, stderr, json: code === 0 ? (JSON.parse(stdout) as Json) : undefined };
  }
  const keyList = async (key: string): Promise<Json[]> => {
    const response = await stack.t.fetch("/v1/knowledge-bases", {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(response.status).toBe(200);
    return ((await response.json()) as Json).data;
  };
  const ask = (key: string, slug: string) =>
    stack.t.fetch(`/v1/knowledge-bases/${slug}/ask`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ question: "Where do glaciers form?" }),
    });
  const appList = async (user: AppUserHandle): Promise<Json[]> =>
    ((await (await user.fetch("/rag/kb")).json()) as Json).data;

  /** Shared for every key and every user, or kept to its account, as the operator set it. */
  async function expectShared(slug: string, shared: boolean) {
    const listed = (await keyList(carolKey)).find((base) => base.id === slug);
    const asked = await ask(carolKey, slug);
    const inApp = (await appList(carol)).find((base) => base.slug === slug);
    if (shared) {
      expect(listed).toMatchObject({ id: slug, object: "knowledge_base", shared: true, documents: 1 });
      expect(asked.status).toBe(200);
      expect(((await asked.json()) as Json).sources[0]).toMatchObject({ document: "two-pages.pdf", page: 2 });
      expect(inApp).toMatchObject({ slug, shared: true, owned: false });
    } else {
      expect(listed).toBeUndefined();
      expect(asked.status).toBe(404);
      expect(inApp).toBeUndefined();
    }
    // The owner sees it whatever the operator did.
    expect((await appList(alice)).find((base) => base.slug === slug)).toMatchObject({ shared, owned: true });
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-kb-operator-"));
    stack = await startKbStack();
    [alice, bob, carol] = await Promise.all([stack.user(), stack.user(), stack.user()]);
    carolKey = (await stack.keyOf(carol.accountId)).key;
    nature = await stack.createBase(alice, "Nature notes");
    expect(
      (await stack.ingest(alice, nature, documentFixture("two-pages.pdf"), "two-pages.pdf")).status,
    ).toBe("ready");
    expect((await stack.ingest(alice, nature, documentFixture("scanned.pdf"), "scan.pdf")).status).toBe(
      "failed",
    );
    bobEmpty = await stack.createBase(bob, "Bob empty");
  }, 60_000);
  afterAll(async () => {
    try {
      await stack?.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("GET /admin/v1/knowledge-bases lists every base by slug, with its owner account, its documents (all and ready) and whether it is shared", async () => {
    const answer = await stack.t.admin("GET", "/knowledge-bases");
    expect(answer.status).toBe(200);
    expect(answer.body.object).toBe("list");
    expect(answer.body.data.map((base: Json) => base.slug)).toEqual([bobEmpty, nature].sort());
    const byslug = new Map<string, Json>(answer.body.data.map((base: Json) => [base.slug, base]));
    const created = ((await (await alice.fetch(`/rag/kb/${nature}`)).json()) as Json).created_at;
    expect(byslug.get(nature)).toEqual({
      id: expect.any(String),
      object: "knowledge_base",
      slug: nature,
      name: "Nature notes",
      description: null,
      account_id: alice.accountId,
      shared: false,
      documents: 2,
      ready_documents: 1,
      created_at: created,
    });
    expect(byslug.get(bobEmpty)).toMatchObject({
      account_id: bob.accountId,
      shared: false,
      documents: 0,
      ready_documents: 0,
    });
  });

  it("the operator API needs the admin token: none, or an API key -> 401", async () => {
    expect((await stack.t.fetch("/admin/v1/knowledge-bases")).status).toBe(401);
    const withKey = await stack.t.fetch(`/admin/v1/knowledge-bases/${nature}/share`, {
      method: "POST",
      headers: { authorization: `Bearer ${carolKey}` },
    });
    expect(withKey.status).toBe(401);
    await expectShared(nature, false);
  });

  it("POST /share: listed and asked by every key, shown with owned false in other users' GET /rag/kb; /unshare takes it back", async () => {
    await expectShared(nature, false);
    const shared = await stack.t.admin("POST", `/knowledge-bases/${nature}/share`);
    expect(shared.status).toBe(200);
    expect(shared.body).toMatchObject({
      object: "knowledge_base",
      slug: nature,
      shared: true,
      ready_documents: 1,
    });
    // Sharing twice changes nothing.
    expect((await stack.t.admin("POST", `/knowledge-bases/${nature}/share`)).body.shared).toBe(true);
    await expectShared(nature, true);
    expect((await stack.t.admin("GET", "/knowledge-bases")).body.data).toContainEqual(
      expect.objectContaining({ slug: nature, shared: true }),
    );

    const unshared = await stack.t.admin("POST", `/knowledge-bases/${nature}/unshare`);
    expect(unshared.status).toBe(200);
    expect(unshared.body).toMatchObject({ slug: nature, shared: false });
    await expectShared(nature, false);
  });

  it("a shared base stays its owner's: another user can neither upload to it nor delete it (404)", async () => {
    expect((await stack.t.admin("POST", `/knowledge-bases/${nature}/share`)).status).toBe(200);
    try {
      expect((await stack.upload(carol, nature, documentFixture("notes.txt"), "notes.txt")).status).toBe(404);
      expect((await carol.fetch(`/rag/kb/${nature}`, { method: "DELETE" })).status).toBe(404);
      expect((await alice.fetch(`/rag/kb/${nature}`)).status).toBe(200);
    } finally {
      expect((await stack.t.admin("POST", `/knowledge-bases/${nature}/unshare`)).status).toBe(200);
    }
  });

  it.each(["share", "unshare"])("POST /%s of an unknown slug -> 404 not_found naming it", async (action) => {
    const answer = await stack.t.admin("POST", `/knowledge-bases/no-such-base/${action}`);
    expect(answer.status).toBe(404);
    expect(answer.body.error).toMatchObject({
      code: "not_found",
      message: expect.stringContaining("no-such-base"),
    });
  });

  it("a shared base without a ready document is still not listed to keys, and asking it is 409", async () => {
    expect((await stack.t.admin("POST", `/knowledge-bases/${bobEmpty}/share`)).status).toBe(200);
    try {
      expect((await keyList(carolKey)).map((base) => base.id)).not.toContain(bobEmpty);
      const asked = await ask(carolKey, bobEmpty);
      expect(asked.status).toBe(409);
      expect(((await asked.json()) as Json).error.code).toBe("knowledge_base_not_ready");
      expect((await appList(carol)).find((base) => base.slug === bobEmpty)).toMatchObject({ owned: false });
    } finally {
      expect((await stack.t.admin("POST", `/knowledge-bases/${bobEmpty}/unshare`)).status).toBe(200);
    }
  });

  it("zona kb list prints what the operator API answers", async () => {
    const listed = await zona(["kb", "list"]);
    expect(listed).toMatchObject({ code: 0, stderr: "" });
    expect(listed.json).toEqual((await stack.t.admin("GET", "/knowledge-bases")).body);
  });

  it("zona kb share SLUG / unshare SLUG share the base with every key and take it back", async () => {
    const shared = await zona(["kb", "share", nature]);
    expect(shared).toMatchObject({ code: 0, stderr: "" });
    expect(shared.json).toMatchObject({
      object: "knowledge_base",
      slug: nature,
      account_id: alice.accountId,
      shared: true,
    });
    await expectShared(nature, true);
    expect((await zona(["kb", "list"])).json.data).toContainEqual(
      expect.objectContaining({ slug: nature, shared: true }),
    );

    const unshared = await zona(["kb", "unshare", nature]);
    expect(unshared).toMatchObject({ code: 0, stderr: "" });
    expect(unshared.json).toMatchObject({ slug: nature, shared: false });
    await expectShared(nature, false);
  });

  it("zona kb share of an unknown slug exits 1 with the API's message and code; without a slug it is a usage error", async () => {
    const missing = await zona(["kb", "share", "no-such-base"]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toMatch(/^zona: .*no-such-base.* \(not_found\)\n$/);
    const bare = await zona(["kb", "unshare"]);
    expect(bare.code).toBe(2);
  });
});
