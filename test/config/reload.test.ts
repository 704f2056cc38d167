import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { runCli } from "../../src/cli/run-cli.ts";
import { loadConfig } from "../../src/config/load.ts";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";

const MODEL = "gemma3.8-27b";
const NEW_MODEL = "gemma3.9-12b";

/** A configuration file with one zone, the chat models and the machines given. */
function configFile(
  machines: Array<{ name: string; url: string; models: unknown }>,
  extra: Record<string, unknown> = {},
) {
  return {
    // As the test app runs it, so that only what a test changes differs.
    server: { log_level: "silent", admin_token: ADMIN_TOKEN },
    installation: { zones: [{ id: "ch-ti" }] },
    tiers: { slow: { multiplier: 1, requests_per_minute: 1000 } },
    models: [
      { id: MODEL, kind: "chat", prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 } },
      { id: NEW_MODEL, kind: "chat" },
    ],
    engines: { builtin_speech: false },
    machines: machines.map((machine) => ({ zone: "ch-ti", protocol: "openai", ...machine })),
    ...extra,
  };
}

describe("configuration reload (SIGHUP and POST /admin/v1/reload)", () => {
  let dir: string;
  let file: string;
  let first: FakeOpenAiServer;
  let second: FakeOpenAiServer;
  let t: TestApp;
  let key: string;

  const write = (config: unknown) =>
    writeFileSync(file, typeof config === "string" ? config : stringify(config));
  const chat = (model: string, stream = false) =>
    t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, stream, messages: [{ role: "user", content: "Ciao, come stai oggi?" }] }),
    });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "zona-reload-"));
    file = join(dir, "zona.yaml");
    first = new FakeOpenAiServer();
    second = new FakeOpenAiServer();
    const [a] = await Promise.all([first.start(), second.start()]);
    const initial = configFile([{ name: "ti-1", url: a.url, models: [MODEL] }]);
    write(initial);
    t = await startTestApp({ config: initial, loadConfig: () => loadConfig({ ZONA_CONFIG: file }, dir) });
    ({ key } = await t.newKey());
  });

  afterEach(async () => {
    await t.close();
    await Promise.all([first.close(), second.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("a valid file: new machines and models serve the next request, and the answer says what changed", async () => {
    expect((await chat(NEW_MODEL)).status).toBe(503);
    write(
      configFile([
        { name: "ti-1", url: first.url, models: [MODEL] },
        { name: "ti-2", url: second.url, models: [{ id: NEW_MODEL, upstream: "google/gemma-3-12b-it" }] },
      ]),
    );
    const reload = await t.admin("POST", "/reload");
    expect(reload.status).toBe(200);
    expect(reload.body).toMatchObject({ object: "reload", applied: true, restart_required: [] });
    expect(reload.body.changes).toContain("machine ti-2 added");

    const answer = await chat(NEW_MODEL);
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { model: string }).model).toBe(NEW_MODEL);
    expect(second.requestsTo("/v1/chat/completions")).toHaveLength(1);
    const machines = await t.admin("GET", "/models");
    const served = machines.body.data.find((model: { id: string }) => model.id === NEW_MODEL);
    expect(served.machines).toEqual(["ti-2"]);
  });

  it("a removed machine gets no new request", async () => {
    write(configFile([{ name: "ti-2", url: second.url, models: [MODEL] }]));
    expect((await t.admin("POST", "/reload")).body.changes).toEqual([
      "machine ti-2 added",
      "machine ti-1 removed",
    ]);
    expect((await chat(MODEL)).status).toBe(200);
    expect(first.requestsTo("/v1/chat/completions")).toHaveLength(0);
    expect(second.requestsTo("/v1/chat/completions")).toHaveLength(1);
  });

  it.each([
    ["not YAML", "models: [unclosed", /not valid YAML/],
    [
      "a machine naming a model the catalogue lacks",
      configFile([{ name: "ti-1", url: "http://127.0.0.1:9", models: ["no-such-model"] }]),
      /machines\[0\]\.models\[0\]: names a model that is not in the catalogue: no-such-model/,
    ],
    ["a wrong type", { tiers: { slow: { multiplier: "fast" } } }, /tiers\.slow\.multiplier/],
  ])("a bad file (%s) changes nothing and says why: 400 invalid_configuration", async (_name, content, reason) => {
    write(content);
    const reload = await t.admin("POST", "/reload");
    expect(reload.status).toBe(400);
    expect(reload.body.error.code).toBe("invalid_configuration");
    expect(reload.body.error.message).toMatch(reason);
    expect((await chat(MODEL)).status).toBe(200);
    expect(first.requestsTo("/v1/chat/completions")).toHaveLength(1);
  });

  it("a request in flight finishes on the old configuration while the next one uses the new", async () => {
    first.configure({ chunkDelayMs: 150 });
    const streaming = await chat(MODEL, true);
    expect(streaming.status).toBe(200);
    const reader = (streaming.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    expect(text).not.toContain("[DONE]");

    write(configFile([{ name: "ti-2", url: second.url, models: [MODEL] }]));
    expect((await t.admin("POST", "/reload")).status).toBe(200);
    const next = await chat(MODEL);
    expect(next.status).toBe(200);
    expect(second.requestsTo("/v1/chat/completions")).toHaveLength(1);

    // The old stream is still going: it goes on from the removed machine to its end.
    const rest = [];
    for (let part = await reader.read(); !part.done; part = await reader.read()) {
      rest.push(decoder.decode(part.value));
    }
    text += rest.join("");
    expect(rest.join("")).toContain('"delta"');
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(text).not.toContain('"error"');
    expect(first.requestsTo("/v1/chat/completions")).toHaveLength(1);
  });

  it("prices and tier limits change for new requests", async () => {
    expect((await chat(MODEL)).status).toBe(200);
    write(
      configFile([{ name: "ti-1", url: first.url, models: [MODEL] }], {
        tiers: { slow: { multiplier: 1, requests_per_minute: 3 } },
        models: [
          {
            id: MODEL,
            kind: "chat",
            prices: { input_per_million_tokens: 1000, output_per_million_tokens: 2000 },
          },
        ],
      }),
    );
    const reload = await t.admin("POST", "/reload");
    expect(reload.body.changes).toEqual(expect.arrayContaining(["model gemma3.8-27b changed", "tiers"]));
    // This minute's counter goes on: one request before the reload, two more fit under 3.
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await chat(MODEL)).status);
    expect(statuses).toEqual([200, 200, 429]);

    await t.app.services.billing.drain();
    const usage = await t.admin("GET", "/usage");
    const costs = usage.body.data.map((record: { cost: number }) => record.cost).reverse();
    expect(costs).toHaveLength(3);
    expect(costs[1] / costs[0]).toBeCloseTo(1000, 3);
  });

  it("options that need a restart are kept and named (server, app, billing)", async () => {
    write({
      ...configFile([{ name: "ti-1", url: first.url, models: [MODEL] }]),
      server: { log_level: "silent", admin_token: ADMIN_TOKEN, port: 9999 },
      billing: { reservation_timeout_seconds: 60 },
    });
    const reload = await t.admin("POST", "/reload");
    expect(reload.status).toBe(200);
    expect(reload.body.restart_required).toEqual(["server", "billing"]);
    expect(t.app.services.config.server.port).toBe(t.config.server.port);
    expect((await chat(MODEL)).status).toBe(200);
  });

  it("the same file again: applied, nothing changed", async () => {
    const reload = await t.admin("POST", "/reload");
    expect(reload.status).toBe(200);
    expect(reload.body).toEqual({ object: "reload", applied: true, changes: [], restart_required: [] });
  });

  it("`zona reload` asks the running server, prints what changed, and fails with the reasons of a bad file", async () => {
    const zona = async (args: string[]) => {
      let stdout = "";
      let stderr = "";
      const code = await runCli(args, {
        stdout: { write: (chunk: string) => (stdout += chunk) },
        stderr: { write: (chunk: string) => (stderr += chunk) },
        stdin: Readable.from([]),
        env: { ZONA_ADMIN_TOKEN: ADMIN_TOKEN, ZONA_URL: t.url, ZONA_CONFIG: file },
        cwd: dir,
      });
      return { code, stdout, stderr };
    };
    write(
      configFile([
        { name: "ti-1", url: first.url, models: [MODEL] },
        { name: "ti-2", url: second.url, models: [NEW_MODEL] },
      ]),
    );
    expect(await zona(["reload"])).toEqual({ code: 0, stdout: "reloaded: machine ti-2 added\n", stderr: "" });
    expect((await chat(NEW_MODEL)).status).toBe(200);

    // The command reads the same file to find the server, so a bad one is refused with its reasons either way.
    write(configFile([{ name: "ti-1", url: first.url, models: ["no-such-model"] }]));
    const bad = await zona(["reload"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toContain("names a model that is not in the catalogue: no-such-model");
    expect((await chat(NEW_MODEL)).status).toBe(200);
  });
});
