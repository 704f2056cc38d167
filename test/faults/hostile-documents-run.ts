import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { HostileDocument } from "../knowledge/hostile-documents.ts";
import { type CrashSetup, signedInAppUser } from "./crash-setup.ts";
import { probeProcess } from "./probe-in-process.ts";

/**
 * The hostile-document experiment against a real Zona (test/faults/hostile-documents.test.ts at a
 * small size, `npm run faults:documents` whole): two users send the corpus while /healthz and a
 * third user's list of conversations are asked every 250 ms, and Zona's memory is measured.
 */

/** The probes' period. */
export const PROBE_EVERY_MS = 250;

/** A document as the app API lists it. */
export interface DocumentState {
  id: string;
  filename: string;
  status: string;
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** Resident memory of a process, in MB (Linux). */
async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
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
      if (answer.status !== 202) throw new Error(`${document.name}: ${answer.status} ${await answer.text()}`);
      return { document, id: ((await answer.json()) as { id: string }).id };
    }),
  );
  const sent = new Set(uploads.map((upload) => upload.id));
  const ended = new Map<string, DocumentState>();
  for (const deadline = Date.now() + 3_600_000; ended.size < uploads.length; ) {
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
export async function runHostileDocuments(setup: CrashSetup, corpus: HostileDocument[]) {
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
      if (made.status !== 201) throw new Error(`a base: ${made.status}`);
      return ((await made.json()) as { slug: string }).slug;
    }),
  );
  const pid = setup.zona.pid as number;
  const health = probeProcess(`${url}/healthz`);
  const other = probeProcess(`${url}/api/v1/chat/sessions`, `Bearer ${bystander}`);
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
