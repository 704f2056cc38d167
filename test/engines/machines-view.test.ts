import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_CHAT_MODEL } from "../../src/cli/machines-commands.ts";
import { runCli } from "../../src/cli/run-cli.ts";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

const MODEL = "gemma3.8-27b";
const UPSTREAM = "google/gemma-3-27b-it";
const MACHINE_KEY = "machine-secret-7f3a";

describe("/admin/v1/machines after failures, and `zona machines`", () => {
  const fakes = {
    ok: new FakeOpenAiServer(),
    down: new FakeOpenAiServer(),
    broken: new FakeOpenAiServer(),
    hanging: new FakeOpenAiServer(),
  };
  let t: TestApp;
  let dir: string;
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-machines-"));
    await Promise.all(Object.values(fakes).map((fake) => fake.start()));
    const hangingUrl = fakes.hanging.url.replace("http://", "http://probe:hunter2@");
    t = await startTestApp({
      config: {
        installation: { zones: [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }] },
        engines: { first_byte_timeout_ms: 300, probe_timeout_ms: 200, circuit_cooldown_seconds: 60 },
        models: [{ id: MODEL, kind: "chat" }],
        machines: [
          { name: "ok", zone: "a", protocol: "openai", url: fakes.ok.url, models: { [MODEL]: UPSTREAM } },
          { name: "down", zone: "b", protocol: "openai", url: fakes.down.url, models: [MODEL] },
          {
            name: "broken",
            zone: "c",
            protocol: "openai",
            url: fakes.broken.url,
            api_key: MACHINE_KEY,
            capacity: 4,
            models: [MODEL],
          },
          { name: "hanging", zone: "d", protocol: "openai", url: hangingUrl, models: [MODEL] },
        ],
      },
    });
    for (const zone of ["a", "b", "c", "d"]) keys[zone] = (await t.newKey({ key: { zones: [zone] } })).key;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(Object.values(fakes).map((fake) => fake.close()));
    await rm(dir, { recursive: true, force: true });
  });

  const chat = (zone: string, stream = false) =>
    t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${keys[zone]}`, "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, stream, messages: [{ role: "user", content: "hello" }] }),
    });
  const view = async () => {
    const answer = await t.admin("GET", "/machines");
    expect(answer.status).toBe(200);
    return {
      // biome-ignore lint/suspicious/noExplicitAny: checked by assertions
      byName: (name: string) => answer.body.data.find((m: any) => m.name === name),
      body: answer.body,
    };
  };
  async function zona(args: string[], env: Record<string, string> = {}) {
    let stdout = "";
    let stderr = "";
    const code = await runCli(args, {
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (stderr += chunk) },
      stdin: Readable.from([]),
      env: { ZONA_ADMIN_TOKEN: ADMIN_TOKEN, ZONA_DATA_DIR: join(dir, "data"), ...env },
      cwd: dir,
    });
    return { code, stdout, stderr };
  }

  it("before any request: every machine with zone, protocol, models (catalogue id and upstream name), up", async () => {
    const { body, byName } = await view();
    expect(body.object).toBe("list");
    expect(body.data.map((m: { name: string }) => m.name)).toEqual(["ok", "down", "broken", "hanging"]);
    expect(byName("ok")).toMatchObject({
      object: "machine",
      zone: "a",
      protocol: "openai",
      url: fakes.ok.url,
      models: [{ id: MODEL, kind: "chat", upstream: UPSTREAM }],
      state: "up",
      until: null,
      last_error: null,
      last_success_at: null,
      in_flight: 0,
      capacity: 1,
      latency_ms: { p50: null, p99: null, samples: 0, window_minutes: 5 },
    });
    expect(byName("broken")).toMatchObject({
      models: [{ id: MODEL, kind: "chat", upstream: MODEL }],
      capacity: 4,
    });
  });

  it("after failures (down, 500, hang -> timeout): states, circuits open until later, last errors", async () => {
    await fakes.down.setMode("refuse");
    await fakes.broken.setMode("error500");
    await fakes.hanging.setMode("hang");
    for (let i = 0; i < 3; i++) expect((await chat("a")).status).toBe(200);
    expect((await chat("b")).status).toBe(503);
    // Answers with errors open the circuit at the third.
    for (let i = 0; i < 3; i++) expect((await chat("c")).status).toBe(502);
    for (let i = 0; i < 3; i++) expect((await chat("d")).status).toBe(502);

    const { byName, body } = await view();
    const before = Date.now();
    for (const row of [
      { name: "ok", state: "up", error: null },
      { name: "down", state: "circuit_open", error: { source: "request", kind: "connect", status: null } },
      { name: "broken", state: "circuit_open", error: { source: "request", kind: "status", status: 500 } },
      { name: "hanging", state: "circuit_open", error: { source: "request", kind: "timeout", status: null } },
    ]) {
      const machine = byName(row.name);
      expect(machine.state, row.name).toBe(row.state);
      expect(machine.in_flight, row.name).toBe(0);
      if (row.error === null) {
        expect(machine.last_error).toBeNull();
        expect(machine.until).toBeNull();
        continue;
      }
      expect(machine.last_error, row.name).toMatchObject(row.error);
      expect(Date.parse(machine.last_error.at)).toBeLessThanOrEqual(before);
      expect(Date.parse(machine.until), row.name).toBeGreaterThan(before);
    }
    expect(byName("broken").last_error.message).toContain("fake failure");
    expect(byName("down").last_error.message).toContain("ECONNREFUSED");
    const ok = byName("ok");
    expect(Date.parse(ok.last_success_at)).toBeLessThanOrEqual(before);
    expect(ok.latency_ms.samples).toBe(3);
    expect(ok.latency_ms.p50).toBeGreaterThan(0);
    expect(ok.latency_ms.p99).toBeGreaterThanOrEqual(ok.latency_ms.p50);
    // Never a machine's key, nor the password of a url.
    const text = JSON.stringify(body);
    expect(text).not.toContain(MACHINE_KEY);
    expect(text).not.toContain("hunter2");
    expect(byName("hanging").url).toBe(fakes.hanging.url);
  });

  it("after a probe round: machines that do not answer it are down (probe error); one that answers again is up", async () => {
    await t.app.services.health.probeAll();
    let { byName } = await view();
    expect(byName("ok").state).toBe("up");
    for (const [name, kind] of [
      ["down", "connect"],
      ["broken", "status"],
      ["hanging", "timeout"],
    ] as const) {
      expect(byName(name).state, name).toBe("down");
      expect(byName(name).last_error, name).toMatchObject({ source: "probe", kind });
    }
    await fakes.down.setMode("normal");
    await t.app.services.health.probeAll();
    ({ byName } = await view());
    expect(byName("down")).toMatchObject({ state: "up", until: null });
    expect((await chat("b")).status).toBe(200);
  });

  it("a streamed answer keeps its machine's request in flight until it ends", async () => {
    fakes.ok.configure({ chunks: 50, chunkDelayMs: 20 });
    try {
      const response = await chat("a", true);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      expect((await view()).byName("ok").in_flight).toBe(1);
      await reader.cancel();
    } finally {
      fakes.ok.configure({ chunks: undefined, chunkDelayMs: 0 });
    }
  });

  it("`zona machines` against the running server prints a readable table and the last errors", async () => {
    const run = await zona(["machines"], { ZONA_URL: t.url });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toMatch(/^MACHINE\s+ZONE\s+PROTOCOL\s+STATE\s+IN FLIGHT\s+P50 MS\s+P99 MS\s+MODELS$/);
    expect(lines.find((l) => l.startsWith("ok "))).toMatch(
      /^ok\s+a\s+openai\s+up\s+\d\/1\s+[\d.]+\s+[\d.]+\s+/,
    );
    expect(run.stdout).toContain(`${MODEL} (${UPSTREAM})`);
    expect(lines.find((l) => l.startsWith("broken "))).toMatch(/\sdown\s+0\/4\s/);
    expect(run.stdout).toContain("Last errors:");
    expect(run.stdout).toMatch(/ {2}broken: \S+ \(.+ ago\), probe, status 500: /);
    expect(run.stdout).not.toContain(MACHINE_KEY);
    expect(run.stdout).not.toContain(NO_CHAT_MODEL);

    const json = await zona(["machines", "list", "--json"], { ZONA_URL: t.url });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).data.map((m: { name: string }) => m.name)).toEqual([
      "ok",
      "down",
      "broken",
      "hanging",
    ]);
  });

  it("`zona machines` of an installation where no machine serves a chat model says so below the table, naming docs/engines.md", async () => {
    const fresh = await startTestApp({
      config: {
        installation: { zones: [{ id: "a" }] },
        models: [
          { id: MODEL, kind: "chat" },
          { id: "bge-m3", kind: "embedding" },
        ],
        machines: [{ name: "tei", zone: "a", protocol: "tei", url: fakes.ok.url, models: ["bge-m3"] }],
      },
    });
    try {
      const run = await zona(["machines"], { ZONA_URL: fresh.url });
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^tei\s+a\s+tei\s/m);
      expect(run.stdout.endsWith(`\n${NO_CHAT_MODEL}`)).toBe(true);
      expect(NO_CHAT_MODEL).toContain("docs/engines.md");
      const json = JSON.parse((await zona(["machines", "--json"], { ZONA_URL: fresh.url })).stdout);
      expect(json.data[0].models).toEqual([{ id: "bge-m3", kind: "embedding", upstream: "bge-m3" }]);
    } finally {
      await fresh.close();
    }
  });

  it("`zona machines` with no server to ask: a clear message, exit 1, and no database is opened", async () => {
    const run = await zona(["machines"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("machine health: this needs the running Zona server");
    expect(existsSync(join(dir, "data"))).toBe(false);
  });
});
