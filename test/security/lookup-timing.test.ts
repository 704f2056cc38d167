import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { PASSWORD } from "../app/auth-fixtures.ts";
import { freePort } from "../helpers/free-port.ts";
import { ADMIN_TOKEN } from "../helpers/test-app.ts";
import { documentFixture, type KbStack, startKbStack } from "../knowledge/kb-stack.ts";
import { startVideoStack, type VideoStack } from "../videos/video-stack.ts";

/**
 * Another account's resource must not be told from a missing one by the time of the
 * answer (a database hit against a miss), and login must take as long for an unknown address as
 * for a known one with a wrong password (scrypt runs in both cases).
 *
 * Method: after a warm-up, the two requests are sent one after the other, many times, the order
 * swapped every round (so drift and after-effects fall on both alike), and their medians compared.
 * The difference counts as noise when it is under max(0.5 ms, 5 IQR / sqrt(n)), IQR the two
 * requests' mean interquartile range and n the rounds: the difference of two medians has a standard
 * error of about 1.3 IQR / sqrt(n), so the bound is near four standard errors (a false alarm about
 * once in 10,000 comparisons), and a third of the IQR at n = 200. Each comparison has a control
 * that the same rule must catch: the same request with 2 ms added (busy-waited inside the timed
 * span), and for login a login refused before scrypt.
 * TIMING_ROUNDS changes the number of rounds; TIMING_REPORT=1 prints the figures.
 */

const ROUNDS = Number(process.env.TIMING_ROUNDS ?? 200);
const LOGIN_ROUNDS = Math.max(10, Math.round(ROUNDS / 10));
const WARM_UP = 20;
const FLOOR_MS = 0.5;
const CONTROL_MS = 2;

type Request = () => Promise<Response>;

/** Time of one request until its whole body is read; `extraMs` busy-waits inside the span (the control). */
async function timed(request: Request, extraMs = 0): Promise<number> {
  const start = performance.now();
  if (extraMs > 0) while (performance.now() - start < extraMs);
  const response = await request();
  await response.arrayBuffer();
  return performance.now() - start;
}

const quantile = (sorted: number[], q: number) => {
  const at = (sorted.length - 1) * q;
  const low = sorted[Math.floor(at)] ?? 0;
  const high = sorted[Math.ceil(at)] ?? 0;
  return low + (high - low) * (at - Math.floor(at));
};
const summary = (samples: number[]) => {
  const sorted = [...samples].sort((x, y) => x - y);
  return { median: quantile(sorted, 0.5), iqr: quantile(sorted, 0.75) - quantile(sorted, 0.25) };
};

/** The figures of one comparison: medians, their difference, and the noise bound it is held to. */
interface Comparison {
  name: string;
  rounds: number;
  medianA: number;
  medianB: number;
  difference: number;
  bound: number;
  withinNoise: boolean;
}

const report: Comparison[] = [];
afterAll(() => {
  if (!process.env.TIMING_REPORT) return;
  const line = (c: Comparison) =>
    `${c.name}: ${c.rounds} rounds, medians ${c.medianA.toFixed(3)} / ${c.medianB.toFixed(3)} ms, ` +
    `difference ${c.difference.toFixed(3)} ms, bound ${c.bound.toFixed(3)} ms, ${c.withinNoise ? "within noise" : "DIFFERENT"}`;
  console.info(report.map(line).join("\n"));
});

/** Interleaved measurement of two requests (the second may carry the control's extra time). */
async function compare(
  name: string,
  a: Request,
  b: Request,
  options: { rounds: number; warmUp?: number; extraMsOnA?: number },
): Promise<Comparison> {
  const extra = options.extraMsOnA ?? 0;
  for (let i = 0; i < (options.warmUp ?? WARM_UP); i++) {
    await timed(a, extra);
    await timed(b);
  }
  const timesA: number[] = [];
  const timesB: number[] = [];
  for (let i = 0; i < options.rounds; i++) {
    if (i % 2 === 0) {
      timesA.push(await timed(a, extra));
      timesB.push(await timed(b));
    } else {
      timesB.push(await timed(b));
      timesA.push(await timed(a, extra));
    }
  }
  const [sa, sb] = [summary(timesA), summary(timesB)];
  const bound = Math.max(FLOOR_MS, (5 * (sa.iqr + sb.iqr)) / 2 / Math.sqrt(options.rounds));
  const difference = Math.abs(sa.median - sb.median);
  const result = {
    name,
    rounds: options.rounds,
    medianA: sa.median,
    medianB: sb.median,
    difference,
    bound,
    withinNoise: difference <= bound,
  };
  report.push(result);
  return result;
}

/** A lookup compared: another account's resource against a missing one, then the 2 ms control. */
async function lookupCase(name: string, theirs: Request, missing: Request, label = "another's vs missing") {
  const status = [(await theirs()).status, (await missing()).status];
  expect(status[0]).toBe(status[1]);
  const main = await compare(`${name}: ${label}`, theirs, missing, { rounds: ROUNDS });
  const control = await compare(`${name}: control, +${CONTROL_MS} ms`, theirs, theirs, {
    rounds: ROUNDS,
    warmUp: 5,
    extraMsOnA: CONTROL_MS,
  });
  expect(control.withinNoise, "the rule catches a 2 ms difference").toBe(false);
  expect(main.withinNoise, `${main.difference.toFixed(3)} ms > ${main.bound.toFixed(3)} ms`).toBe(true);
}

describe("Timing of a miss against a hit on the app and key APIs", () => {
  let s: KbStack;
  let owner: AppUserHandle;
  let stranger: AppUserHandle;
  let strangerKey: string;
  let conversationId: string;
  let slug: string;
  let address = 0;
  beforeAll(async () => {
    // Every login comes from an address of its own (behind a trusted proxy), so the address limit stays out of the way.
    s = await startKbStack({ config: { server: { trust_proxy: true } } });
    owner = await s.user();
    stranger = await s.user();
    strangerKey = (await s.keyOf(stranger.accountId)).key;
    const created = await owner.post("/chat/sessions", { title: "Private plans" });
    conversationId = ((await created.json()) as { id: string }).id;
    slug = await s.createBase(owner, "Private timing base");
    await s.ingest(owner, slug, documentFixture("notes.txt"), "notes.txt");
  }, 60_000);
  afterAll(() => s?.close());

  /** A public auth call, each from an address of its own. */
  const login =
    (body: Record<string, string>, path = "/auth/login") =>
    () => {
      address += 1;
      return s.t.fetch(`/api/v1${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-forwarded-for": `198.51.${Math.floor(address / 250) % 250}.${address % 250}`,
        },
        body: JSON.stringify(body),
      });
    };

  it(`a conversation id of another user vs a never-existing one (GET /chat/sessions/{id}), ${ROUNDS} rounds each`, async () => {
    await lookupCase(
      "conversation",
      () => stranger.fetch(`/chat/sessions/${conversationId}`),
      () => stranger.fetch(`/chat/sessions/${randomUUID()}`),
    );
  }, 120_000);

  it(`a knowledge base slug of another account vs a missing one (GET /rag/kb/{slug}), ${ROUNDS} rounds each`, async () => {
    const missing = `m${randomBytes(slug.length).toString("hex")}`.slice(0, slug.length);
    await lookupCase(
      "knowledge base (app API)",
      () => stranger.fetch(`/rag/kb/${slug}`),
      () => stranger.fetch(`/rag/kb/${missing}`),
    );
  }, 120_000);

  it(`the same slug on the key API (POST /v1/knowledge-bases/{slug}/ask), ${ROUNDS} rounds each`, async () => {
    const missing = `m${randomBytes(slug.length).toString("hex")}`.slice(0, slug.length);
    const ask = (which: string) => () =>
      s.t.fetch(`/v1/knowledge-bases/${which}/ask`, {
        method: "POST",
        headers: { authorization: `Bearer ${strangerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ question: "What is in the notes?" }),
      });
    await lookupCase("knowledge base (key API)", ask(slug), ask(missing));
  }, 120_000);

  it(`login: an existing email with a wrong password vs an unknown email take as long (scrypt runs for both), ${LOGIN_ROUNDS} rounds each`, async () => {
    const email = `timing-${randomUUID()}@example.com`;
    expect((await login({ email, password: PASSWORD }, "/auth/register")()).status).toBe(201);
    const known = login({ email, password: `${PASSWORD}-wrong` });
    const unknown = login({ email: `nobody-${randomUUID()}@example.com`, password: `${PASSWORD}-wrong` });
    expect([(await known()).status, (await unknown()).status]).toEqual([401, 401]);
    const main = await compare("login: known email, wrong password vs unknown email", known, unknown, {
      rounds: LOGIN_ROUNDS,
      warmUp: 3,
    });
    // The control: a login refused before scrypt (a password over 1,024 characters is 422 at once).
    const refused = login({ email, password: "x".repeat(1025) });
    expect((await refused()).status).toBe(422);
    const control = await compare("login: control, no scrypt", known, refused, {
      rounds: LOGIN_ROUNDS,
      warmUp: 1,
    });
    expect(control.withinNoise, "the rule catches a login without scrypt").toBe(false);
    expect(main.withinNoise, `${main.difference.toFixed(1)} ms > ${main.bound.toFixed(1)} ms`).toBe(true);
  }, 180_000);
});

describe("Timing of a miss against a hit on video jobs", () => {
  let v: VideoStack;
  let strangerKey: string;
  let id: string;
  beforeAll(async () => {
    v = await startVideoStack();
    strangerKey = (await v.t.newKey()).key;
    const created = await v.create({ prompt: "a lighthouse at dusk" });
    id = created.body.id;
    await v.waitFor(id);
  }, 60_000);
  afterAll(() => v?.close());

  it(`a video id of another account vs a missing one (GET /v1/videos/{id}), ${ROUNDS} rounds each`, async () => {
    const get = (which: string) => () =>
      v.t.fetch(`/v1/videos/${which}`, { headers: { authorization: `Bearer ${strangerKey}` } });
    await lookupCase("video", get(id), get(`video_${randomBytes(16).toString("hex")}`));
  }, 120_000);
});

describe("Timing of forgot-password as a client outside the server sees it (docs/app-auth.md: neither the answer nor its timing tells)", () => {
  // The mail is made after the answer: measured from inside the server's own process, that work
  // would hold up the client's reading of the answer, which a client elsewhere never sees.
  let dir: string;
  let child: ChildProcess | undefined;
  let url: string;
  let address = 0;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-timing-"));
    await writeFile(join(dir, "zona.yaml"), "server:\n  trust_proxy: true\n");
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ["src/main.ts"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        HOST: "127.0.0.1",
        ZONA_DATA_DIR: join(dir, "data"),
        ZONA_CONFIG: join(dir, "zona.yaml"),
        ZONA_ADMIN_TOKEN: ADMIN_TOKEN,
        ZONA_LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    // What it said on stderr, should it not start: a first start migrates a new data folder, which
    // on a busy 2-core machine has taken over 45 s.
    let said = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      said = (said + chunk.toString("utf8")).slice(-2_000);
    });
    for (const deadline = Date.now() + 100_000; ; ) {
      const up = await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline || child.exitCode !== null) {
        throw new Error(`zona did not start (exit code ${child.exitCode}): ${said}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 120_000);
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  });

  const post = (path: string, body: Record<string, string>) => () => {
    address += 1;
    return fetch(`${url}/api/v1${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-forwarded-for": `198.51.${Math.floor(address / 250) % 250}.${address % 250}`,
      },
      body: JSON.stringify(body),
    });
  };

  it(`an address with an account vs one without, ${ROUNDS} rounds each`, async () => {
    const email = `timing-${randomUUID()}@example.com`;
    expect((await post("/auth/register", { email, password: PASSWORD })()).status).toBe(201);
    const forgot = (address: string) => post("/auth/forgot-password", { email: address });
    await lookupCase(
      "forgot-password (server in its own process)",
      forgot(email),
      forgot(`nobody-${randomUUID()}@example.com`),
      "known vs unknown address",
    );
  }, 120_000);
});
