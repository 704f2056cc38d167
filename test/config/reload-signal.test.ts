import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { freePort } from "../helpers/free-port.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const NODE = join(ROOT, "node_modules/.bin/node");
const ADMIN = "reload-signal-admin-token-0123";

// Nothing listens on port 9 of the loopback (discard): the machine is unreachable.
const DEAD_URL = "http://127.0.0.1:9";

function configWith(models: string[], machines: string[] = ["ti-1"]) {
  return {
    engines: { builtin_speech: false, probe_timeout_ms: 500 },
    installation: { zones: [{ id: "ch-ti" }] },
    models: models.map((id) => ({ id, kind: "chat" })),
    machines: machines.map((name) => ({ name, zone: "ch-ti", protocol: "openai", url: DEAD_URL, models })),
  };
}

describe("SIGHUP re-reads the configuration of a running Zona", () => {
  let dir: string;
  let file: string;
  let server: ChildProcess;
  let url: string;
  let output = "";

  const waitFor = async (text: string, from = 0) => {
    const deadline = Date.now() + 90_000;
    while (!output.slice(from).includes(text)) {
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`no "${text}" in:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const catalogue = async () => {
    const response = await fetch(`${url}/admin/v1/models`, { headers: { authorization: `Bearer ${ADMIN}` } });
    return ((await response.json()) as { data: Array<{ id: string }> }).data.map((model) => model.id);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "zona-sighup-"));
    file = join(dir, "zona.yaml");
    writeFileSync(file, stringify(configWith(["gemma3.8-27b"])));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = spawn(NODE, ["src/main.ts"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        HOST: "127.0.0.1",
        ZONA_DATA_DIR: join(dir, "data"),
        ZONA_ADMIN_TOKEN: ADMIN,
        ZONA_CONFIG: file,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    server.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    await waitFor("zona listening");
  }, 120_000);

  afterAll(async () => {
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("at start, one warning names each machine that does not answer", async () => {
    await waitFor("machine ti-1 (openai at http://127.0.0.1:9) is unreachable");
    const line = output.split("\n").find((text) => text.includes("machine ti-1 (openai"));
    expect(JSON.parse(line ?? "{}")).toMatchObject({ level: 40, machine: "ti-1" });
  });

  it("a valid file is applied: the catalogue changes without a restart, and the machines are checked again", async () => {
    expect(await catalogue()).toEqual(["gemma3.8-27b"]);
    writeFileSync(file, stringify(configWith(["gemma3.8-27b", "gemma3.9-12b"], ["ti-1", "ti-2"])));
    const from = output.length;
    server.kill("SIGHUP");
    await waitFor("configuration reloaded", from);
    expect(await catalogue()).toEqual(["gemma3.8-27b", "gemma3.9-12b"]);
    await waitFor("machine ti-2 (openai at http://127.0.0.1:9) is unreachable", from);
    expect(server.exitCode).toBeNull();
  });

  it("a bad file changes nothing, is logged with its reason, and Zona keeps running", async () => {
    writeFileSync(file, "models:\n  - { id: broken, kind: not-a-kind }\n");
    const from = output.length;
    server.kill("SIGHUP");
    await waitFor("configuration not reloaded", from);
    expect(output.slice(from)).toContain("models[0].kind");
    expect(await catalogue()).toEqual(["gemma3.8-27b", "gemma3.9-12b"]);
    expect(server.exitCode).toBeNull();
  });
});
