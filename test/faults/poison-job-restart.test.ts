/**
 * DESIGN.md "Untrusted work" and docs/reliability.md "Poison jobs": a real Zona process (embedded,
 * its data in a temporary folder) is killed with SIGKILL while it reads an uploaded document (the
 * embedding machine takes the batch and never answers, so the reading is mid-run), and started
 * again, as a supervisor would after a crash. The reading killed the process twice (the default
 * `server.job_crash_limit`): the third start fails the document with the reason, and no start after
 * that reads it again.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { PASSWORD } from "../app/auth-fixtures.ts";
import { FakeTeiServer } from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { ZonaChild } from "../helpers/zona-child.ts";

const POISON_WORDS = `cormorant-veldt-${randomBytes(4).toString("hex")}`;
const HEALTHY_WORDS = `lighthouse-keeper-${randomBytes(4).toString("hex")}`;

interface DocumentView {
  id: string;
  status: string;
  error: string | null;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("Poison jobs: a document whose reading kills Zona, on a real process started again after each crash", () => {
  let dir: string;
  let tei: FakeTeiServer;
  let zona: ZonaChild;
  let adminToken: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "zona-poison-"));
    tei = new FakeTeiServer({ wordEmbeddings: true });
    await tei.start();
    const configFile = join(dir, "zona.yaml");
    writeFileSync(
      configFile,
      stringify({
        installation: { zones: [{ id: "ch-ti" }], trusted_networks: ["127.0.0.0/8"] },
        // No health probe during the run: the hanging machine must stay up, its batches mid-run.
        engines: { probe_interval_seconds: 3_600 },
        models: [{ id: "bge-m3", kind: "embedding" }],
        machines: [{ name: "tei", zone: "ch-ti", protocol: "tei", url: tei.url, models: ["bge-m3"] }],
      }),
    );
    adminToken = randomBytes(24).toString("hex");
    zona = new ZonaChild({
      port: await freePort(),
      configFile,
      adminToken,
      storage: { dataDir: join(dir, "data") },
    });
  });
  afterAll(async () => {
    await zona?.kill9();
    await tei?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A verified user of a new account, signed in: its access token. */
  async function signIn(): Promise<string> {
    const email = `poison-${randomBytes(4).toString("hex")}@example.com`;
    const account = await fetch(`${zona.url}/admin/v1/accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ email, password: PASSWORD, email_verified: true, language: "en" }),
    });
    expect(account.status).toBe(201);
    const login = await fetch(`${zona.url}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: PASSWORD }),
    });
    return ((await login.json()) as { access_token: string }).access_token;
  }

  function app(token: string, path: string, init: RequestInit = {}): Promise<Response> {
    return fetch(`${zona.url}/api/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) },
    });
  }

  async function upload(token: string, slug: string, text: string, filename: string): Promise<string> {
    const form = new FormData();
    form.append("file", new Blob([text]), filename);
    const response = await app(token, `/rag/kb/${slug}/docs`, { method: "POST", body: form });
    expect(response.status).toBe(202);
    return ((await response.json()) as { id: string }).id;
  }

  async function documentOf(token: string, slug: string, id: string): Promise<DocumentView | undefined> {
    const response = await app(token, `/rag/kb/${slug}/docs`);
    expect(response.status).toBe(200);
    return ((await response.json()) as { data: DocumentView[] }).data.find((item) => item.id === id);
  }

  /** Embedding requests that carried the text of the poison document. */
  const poisonBatches = () =>
    tei.requestsTo("/embed").filter((request) => JSON.stringify(request.body).includes(POISON_WORDS));

  it("Untrusted work: a job that killed the process twice is failed with a reason, and the next start is clean", async () => {
    await zona.start();
    const token = await signIn();
    const created = await app(token, "/rag/kb", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Poison" }),
    });
    expect(created.status).toBe(201);
    const { slug } = (await created.json()) as { slug: string };

    // The embedding machine takes every batch and never answers: the reading stays mid-run.
    await tei.setMode("hang");
    const text = `Field notes. ${`The ${POISON_WORDS} nests on the cliffs above the fjord. `.repeat(40)}`;
    const poison = await upload(token, slug, text, "notes.txt");
    for (let death = 1; death <= 2; death++) {
      await until(
        async () => poisonBatches().length,
        (count) => count > 0,
        `the reading, run ${death}`,
      );
      expect((await documentOf(token, slug, poison))?.status).toBe("processing");
      await zona.kill9();
      tei.clearRequests();
      await zona.start();
    }

    // The third start: the reading is not run again; the document fails with the reason.
    const failed = await until(
      () => documentOf(token, slug, poison),
      (document) => document?.status !== "processing" && document?.status !== "queued",
      "the document failed",
    );
    expect(failed).toMatchObject({
      status: "failed",
      error: "Reading this document stopped the service 2 times; it was set aside.",
    });
    const givenUp = zona.output
      .split("\n")
      .filter((line) => line.includes("background job given up"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(givenUp).toEqual([
      expect.objectContaining({ level: 40, job: "kb-ingest", id: `ingest-${poison}`, deaths: 2 }),
    ]);
    expect(zona.output).not.toContain(POISON_WORDS);

    // The next start is clean: the queue works (another document is read) and never reads the poison again.
    await zona.kill9();
    await tei.setMode("normal");
    await zona.start();
    const healthy = await upload(token, slug, `A ${HEALTHY_WORDS} keeps the light. `.repeat(20), "light.txt");
    const ready = await until(
      () => documentOf(token, slug, healthy),
      (document) => document?.status === "ready" || document?.status === "failed",
      "the healthy document",
    );
    expect(ready?.status).toBe("ready");
    expect(tei.requestsTo("/embed").length).toBeGreaterThan(0);
    expect(poisonBatches()).toEqual([]);
    expect((await documentOf(token, slug, poison))?.status).toBe("failed");
  }, 180_000);
});
