import { readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyClientTimeouts, CHECK_EVERY_MS, CLIENT_TIMEOUTS } from "../../src/http/client-timeouts.ts";
import { uploadFolderOf } from "../../src/http/multipart-upload.ts";
import { toneWav } from "../fakes/index.ts";
import { CHAT_MODEL, type FaultStack, startFaultStack } from "./fault-stack.ts";
import { openUploadFiles, pause, serverConnections, until } from "./process-resources.ts";
import { head, multipart, openRaw, type RawClient } from "./raw-client.ts";

// "Slow and hostile clients": slowloris headers and bodies. The headers run against the
// limits in force; the body limit (300 s) is lowered for the run, the way an operator could.
const SLOW_HEADERS = 200;
const BODY_LIMIT_MS = 5_000;
// Closed at the limit, at most one check later, plus room for a busy machine.
const LATE_MS = CHECK_EVERY_MS + 2_500;

/** A normal client, one request per connection, timed while the slow ones hold theirs. */
async function timedRequest(port: number): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const client = await openRaw(port);
  await client.send(head("GET", "/healthz", { connection: "close" }));
  await client.closed;
  return { status: client.status(), ms: performance.now() - started };
}

async function normalClientWhile(port: number, running: () => boolean) {
  const answers: Array<{ status: number; ms: number }> = [];
  while (running()) {
    answers.push(await timedRequest(port));
    await pause(500);
  }
  return answers;
}

describe("Slow clients: slowloris headers and bodies", () => {
  let s: FaultStack;
  beforeAll(async () => {
    s = await startFaultStack();
  });
  afterAll(() => s?.close());

  it("the limits in force: headers 20 s, whole request 300 s (Node's default, which Fastify turns off), checked every second", () => {
    expect(s.t.app.server.headersTimeout).toBe(CLIENT_TIMEOUTS.headersMs);
    expect(s.t.app.server.requestTimeout).toBe(CLIENT_TIMEOUTS.requestMs);
    expect(CLIENT_TIMEOUTS).toEqual({ headersMs: 20_000, requestMs: 300_000, stallMs: 60_000 });
  });

  it(`Slowloris headers: ${SLOW_HEADERS} connections sending a header byte a second are closed after the 20 s headers limit, and a normal client is answered meanwhile`, async () => {
    const cases = [
      {
        name: "request headers, a byte a second",
        count: SLOW_HEADERS - 60,
        keepAliveFirst: false,
        trickle: true,
      },
      { name: "connection opened, nothing sent", count: 30, keepAliveFirst: false, trickle: false },
      {
        name: "after a whole request, the next one's headers a byte a second",
        count: 30,
        keepAliveFirst: true,
        trickle: true,
      },
    ];
    const before = serverConnections(s.port);
    const slow: Array<{ name: string; client: RawClient; startedAt: number }> = [];
    for (const each of cases) {
      for (let i = 0; i < each.count; i++) {
        const client = await openRaw(s.port);
        if (each.keepAliveFirst) {
          await client.send(head("GET", "/healthz"));
          await until("the first answer", () => client.text().includes("\r\n\r\n"), 5_000);
        }
        slow.push({ name: each.name, client, startedAt: performance.now() });
        if (each.trickle) await client.send(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-${i}: `);
      }
    }
    const trickle = setInterval(() => {
      for (const { client, name } of slow) {
        if (!client.isClosed() && name !== "connection opened, nothing sent") void client.send("a");
      }
    }, 1_000);
    let holding = true;
    const normal = normalClientWhile(s.port, () => holding);
    const lived = await Promise.all(
      slow.map(async ({ name, client, startedAt }) => {
        await client.closed;
        return { name, ms: performance.now() - startedAt, status: client.status(), text: client.text() };
      }),
    );
    holding = false;
    clearInterval(trickle);
    const answers = await normal;

    const figures = cases.map(({ name }) => {
      const mine = lived.filter((each) => each.name === name);
      const ms = mine.map((each) => each.ms);
      return {
        name,
        connections: mine.length,
        closedAfterMs: [Math.round(Math.min(...ms)), Math.round(Math.max(...ms))],
        statuses: [...new Set(mine.map((each) => each.status))],
      };
    });
    const slowest = Math.max(...answers.map((answer) => answer.ms));
    console.info(
      JSON.stringify({
        slowloris: figures,
        normal: { requests: answers.length, slowestMs: Math.round(slowest) },
      }),
    );
    for (const each of lived) {
      expect(each.ms, each.name).toBeGreaterThanOrEqual(CLIENT_TIMEOUTS.headersMs - 1_000);
      expect(each.ms, each.name).toBeLessThanOrEqual(CLIENT_TIMEOUTS.headersMs + LATE_MS);
      // The keep-alive ones carry their first answer (200) before the 408.
      expect(each.text, each.name).toContain("HTTP/1.1 408 Request Timeout");
    }
    expect(answers.length).toBeGreaterThanOrEqual(10);
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(slowest).toBeLessThan(3_000);
    await until("the server to close its side", () => serverConnections(s.port) <= before, 5_000);
  }, 40_000);

  it("Slowloris body: a POST trickling a long body (JSON, and multipart on the three upload endpoints) is closed at the request limit, nothing reserved, billed or left on disk", async () => {
    applyClientTimeouts(s.t.app.server, { ...CLIENT_TIMEOUTS, requestMs: BODY_LIMIT_MS });
    try {
      const user = await s.user();
      const audio = multipart(
        { model: "asr-1" },
        "file",
        "tone.wav",
        toneWav({ seconds: 30, sampleRate: 16_000 }),
      );
      const appAudio = multipart({}, "audio", "tone.wav", toneWav({ seconds: 30, sampleRate: 16_000 }));
      const doc = multipart({}, "file", "notes.txt", Buffer.from("Notes on slow clients. ".repeat(40_000)));
      const json = `{"model":"${CHAT_MODEL}","messages":[{"role":"user","content":"`;
      const key = { authorization: `Bearer ${s.key}` };
      const bearer = { authorization: `Bearer ${user.token}` };
      const cases = [
        {
          name: "JSON chat completion",
          path: "/v1/chat/completions",
          auth: key,
          type: "application/json",
          length: 1_000_000,
          opening: Buffer.from(json),
          file: false,
        },
        {
          name: "transcription upload",
          path: "/v1/audio/transcriptions",
          auth: key,
          type: audio.contentType,
          length: audio.whole.length,
          opening: audio.before,
          file: true,
        },
        {
          name: "app audio transcribe",
          path: "/api/v1/audio/transcribe",
          auth: bearer,
          type: appAudio.contentType,
          length: appAudio.whole.length,
          opening: appAudio.before,
          file: true,
        },
        {
          name: "knowledge-base document",
          path: `/api/v1/rag/kb/${user.kb}/docs`,
          auth: bearer,
          type: doc.contentType,
          length: doc.whole.length,
          opening: doc.before,
          file: true,
        },
      ];
      const before = serverConnections(s.port);
      const running = await Promise.all(
        cases.map(async (each) => {
          const client = await openRaw(s.port);
          const startedAt = performance.now();
          await client.send(
            head("POST", each.path, {
              ...each.auth,
              "content-type": each.type,
              "content-length": each.length,
            }),
          );
          await client.send(each.opening);
          return { ...each, client, startedAt };
        }),
      );
      // Two hundred bytes a second: the files are being written while the clients trickle.
      const trickle = setInterval(() => {
        for (const { client } of running) if (!client.isClosed()) void client.send("a".repeat(50));
      }, 250);
      await pause(1_500);
      const folder = uploadFolderOf(s.t.app);
      const filesWhileTrickling = folder ? readdirSync(folder).length : 0;
      const normal = await timedRequest(s.port);
      const lived = await Promise.all(
        running.map(async ({ name, client, startedAt }) => {
          await client.closed;
          return { name, ms: Math.round(performance.now() - startedAt), text: client.text() };
        }),
      );
      clearInterval(trickle);
      console.info(
        JSON.stringify({
          slowBodies: lived.map(({ name, ms, text }) => ({ name, ms, answer: text.split("\r\n")[0] })),
          filesWhileTrickling,
        }),
      );

      expect(normal.status).toBe(200);
      expect(filesWhileTrickling).toBe(3);
      for (const each of lived) {
        expect(each.ms, each.name).toBeGreaterThanOrEqual(BODY_LIMIT_MS - 1_000);
        expect(each.ms, each.name).toBeLessThanOrEqual(BODY_LIMIT_MS + LATE_MS);
        expect(each.text, each.name).toMatch(/^HTTP\/1\.1 408 /);
        // In the spec's error shape (its catalogue has no 408; the code names the case).
        expect(each.text, each.name).toContain('"type":"invalid_request_error","code":"request_timeout"');
      }
      await until("the server to close its side", () => serverConnections(s.port) <= before, 5_000);
      await until(
        "the upload files to be closed and removed",
        () => openUploadFiles().length === 0 && (folder === undefined || readdirSync(folder).length === 0),
        5_000,
      );
      expect(await s.reservationsHeld()).toBe(0);
      expect(await s.usageOf(user.accountId)).toEqual([]);
      expect((await s.t.admin("GET", `/usage?key_id=${s.keyId}`)).body.data).toEqual([]);
      expect(s.whisper.requests.filter((r) => r.method === "POST")).toEqual([]);
      expect(s.chat?.requestsTo("/v1/chat/completions")).toEqual([]);
      const docs = (await (await user.fetch(`/rag/kb/${user.kb}/docs`)).json()) as { data: unknown[] };
      expect(docs.data).toEqual([]);
    } finally {
      applyClientTimeouts(s.t.app.server);
    }
  }, 30_000);

  it("a slow but steady body inside the request limit is answered (the limit cuts slowloris, not slow networks)", async () => {
    applyClientTimeouts(s.t.app.server, { ...CLIENT_TIMEOUTS, requestMs: BODY_LIMIT_MS });
    try {
      const body = Buffer.from(
        JSON.stringify({ model: CHAT_MODEL, messages: [{ role: "user", content: "x".repeat(4_000) }] }),
      );
      const client = await openRaw(s.port);
      await client.send(
        head("POST", "/v1/chat/completions", {
          authorization: `Bearer ${s.key}`,
          "content-type": "application/json",
          "content-length": body.length,
          connection: "close",
        }),
      );
      // A quarter of the body every 600 ms: 2.4 s in all, half the limit.
      for (let i = 0; i < 4; i++) {
        await pause(600);
        await client.send(body.subarray((i * body.length) / 4, ((i + 1) * body.length) / 4));
      }
      await client.closed;
      expect(client.status()).toBe(200);
    } finally {
      applyClientTimeouts(s.t.app.server);
    }
  });
});
