import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAiServer } from "../fakes/fake-openai-server.ts";
import { FakeTeiServer } from "../fakes/fake-tei-server.ts";
import { createTestDatabase } from "../helpers/test-store.ts";
import { type HostileDocument, hostileDocuments } from "../knowledge/hostile-documents.ts";
import { type CrashSetup, setUpCrash, signedInAppUser } from "./crash-setup.ts";

const shared = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL);
/** The probe's period, and the longest any of its answers may take. */
const PROBE_EVERY_MS = 250;
const READ_TIMEOUT_SECONDS = 20;

interface DocumentState {
  id: string;
  filename: string;
  status: string;
  error: string | null;
}

/** Resident memory of a process, in MB (Linux). */
async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** Asks `path` every 250 ms until stopped; keeps how long each answer took. */
function probe(url: string, headers: Record<string, string> = {}): { stop(): Promise<number[]> } {
  const waits: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
      await response.arrayBuffer();
      waits.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return waits;
    },
  };
}

type AppCall = (token: string, path: string, init?: RequestInit) => Promise<Response>;

/** Uploads documents, half for each user, and waits until every one is `ready` or `failed`. */
async function ingest(app: AppCall, users: string[], bases: string[], documents: HostileDocument[]) {
  const uploads = await Promise.all(
    documents.map(async (document, i) => {
      const owner = i % users.length;
      const form = new FormData();
      form.append("file", new Blob([document.bytes]), document.name);
      const answer = await app(users[owner] as string, `/rag/kb/${bases[owner]}/docs`, {
        method: "POST",
        body: form,
      });
      expect(answer.status, document.name).toBe(202);
      return { document, id: ((await answer.json()) as { id: string }).id };
    }),
  );
  const sent = new Set(uploads.map((upload) => upload.id));
  const ended = new Map<string, DocumentState>();
  for (const deadline = Date.now() + 420_000; ended.size < uploads.length; ) {
    if (Date.now() > deadline)
      throw new Error(`not every document ended: ${JSON.stringify([...ended.values()])}`);
    for (const [owner, token] of users.entries()) {
      const list = (await (await app(token, `/rag/kb/${bases[owner]}/docs`)).json()) as {
        data: DocumentState[];
      };
      for (const state of list.data) {
        if (sent.has(state.id) && (state.status === "ready" || state.status === "failed"))
          ended.set(state.id, state);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return uploads.map(({ document, id }) => ({ document, state: ended.get(id) as DocumentState }));
}

/**
 * Two users send the corpus, half each (10 uploads a minute each), while `/healthz` and a third
 * user's list of conversations are asked every 250 ms. The readable texts go first: indexing
 * passages grows the embedded database's memory for good (that is data, not a hostile document's
 * doing), so the memory reference is taken after them, before the hostile documents.
 */
async function run(setup: CrashSetup, corpus: HostileDocument[]) {
  const url = setup.zona.url;
  const app: AppCall = (token, path, init = {}) =>
    fetch(`${url}/api/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
    });
  const users = await Promise.all([signedInAppUser(setup), signedInAppUser(setup)]);
  const bystander = await signedInAppUser(setup);
  const bases = await Promise.all(
    users.map(async (token) => {
      const made = await app(token, "/rag/kb", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: `Hostile ${randomBytes(3).toString("hex")}` }),
      });
      expect(made.status).toBe(201);
      return ((await made.json()) as { slug: string }).slug;
    }),
  );
  const pid = setup.zona.pid as number;
  const health = probe(`${url}/healthz`);
  const other = probe(`${url}/api/v1/chat/sessions`, { authorization: `Bearer ${bystander}` });
  try {
    const texts = await ingest(
      app,
      users,
      bases,
      corpus.filter((document) => document.ends === "ready"),
    );
    // What the reading freed: the process settles (a collection, the database's buffers) for a moment.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const rssBefore = await rssMb(pid);
    const hostile = await ingest(
      app,
      users,
      bases,
      corpus.filter((document) => document.ends !== "ready"),
    );
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const rssAfter = await rssMb(pid);
    return {
      results: [...texts, ...hostile],
      waits: await health.stop(),
      otherWaits: await other.stop(),
      rssBefore,
      rssAfter,
      pid,
    };
  } finally {
    await health.stop();
    await other.stop();
  }
}

describe("Untrusted work: a corpus of hostile documents is read away from the service", () => {
  // The long text files at 1 MB here (storing 15,000 passages takes minutes); `npm run faults:documents` reads them whole.
  const corpus = hostileDocuments({ textMb: 1 });
  let tei: FakeTeiServer;
  let chat: FakeOpenAiServer;
  let embeddingUrl: string;
  let engineUrl: string;
  let database: { url: string; drop(): Promise<void> } | undefined;

  beforeAll(async () => {
    tei = new FakeTeiServer();
    chat = new FakeOpenAiServer();
    embeddingUrl = (await tei.start()).url;
    engineUrl = (await chat.start()).url;
    if (shared) database = await createTestDatabase();
  });
  afterAll(async () => {
    await tei?.close();
    await chat?.close();
    await database?.drop();
  });

  const modes = [
    { name: "embedded", distributed: false },
    ...(shared ? [{ name: "distributed (PostgreSQL and Redis)", distributed: true }] : []),
  ];
  for (const mode of modes) {
    it(`${mode.name}: every document ends ready or failed with a reason, the process never dies, /healthz never waits over 250 ms, and memory comes back`, async () => {
      const setup = await setUpCrash({
        engineUrl,
        prepaid: false,
        ...(mode.distributed && database
          ? { shared: { databaseUrl: database.url, redisUrl: process.env.TEST_REDIS_URL as string } }
          : {}),
        installation: {
          embeddingUrl,
          knowledge: { read_timeout_seconds: READ_TIMEOUT_SECONDS },
          redisPrefix: `hostile-${randomBytes(4).toString("hex")}`,
        },
      });
      try {
        const result = await run(setup, corpus);
        const sorted = [...result.otherWaits].sort((a, b) => a - b);
        console.info(
          `${mode.name}: /healthz max ${Math.round(Math.max(...result.waits))} ms over ${result.waits.length} probes; another user's list p50 ${Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0)} ms, p99 ${Math.round(sorted[Math.floor(sorted.length * 0.99)] ?? 0)} ms; RSS ${Math.round(result.rssBefore)} -> ${Math.round(result.rssAfter)} MB`,
        );
        for (const { document, state } of result.results) {
          expect(state, document.name).toBeDefined();
          if (document.ends !== "either") expect(state?.status, document.name).toBe(document.ends);
          if (state?.status === "failed") {
            expect(state.error, document.name).toMatch(/\w{3,}/);
            if (document.reason) expect(state.error, document.name).toMatch(document.reason);
          }
        }
        // Never restarted: the same process answered throughout.
        expect(setup.zona.pid).toBe(result.pid);
        expect(setup.zona.output).not.toMatch(/FATAL ERROR|heap out of memory/);
        expect(
          Math.max(...result.waits),
          `health waits: ${result.waits.map(Math.round).join(" ")}`,
        ).toBeLessThan(PROBE_EVERY_MS);
        expect(
          result.rssAfter - result.rssBefore,
          `RSS ${result.rssBefore} -> ${result.rssAfter} MB`,
        ).toBeLessThan(50);
      } finally {
        await setup.zona.stop();
        setup.remove();
      }
    }, 600_000);
  }
});
