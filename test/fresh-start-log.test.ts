import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { childOutput } from "./helpers/child-output.ts";
import { freePort } from "./helpers/free-port.ts";

const ROOT = new URL("..", import.meta.url).pathname;

// docs/engines.md: a fresh installation (no configuration file, no machine) says at start, in one
// log line, that no chat model is set up and where to read how to add one.
describe("a fresh installation's start", () => {
  const servers: ChildProcess[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const server of servers) server.kill("SIGKILL");
    for (const dir of dirs) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  });

  /** Starts `src/main.ts` in a folder of its own (with `zona.yaml` when given); its output once it listens. */
  async function startedOutput(configYaml?: string): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), "zona-fresh-"));
    dirs.push(dir);
    if (configYaml !== undefined) writeFileSync(join(dir, "zona.yaml"), configYaml);
    const server = spawn(process.execPath, [join(ROOT, "src/main.ts")], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: String(await freePort()),
        HOST: "127.0.0.1",
        ZONA_DATA_DIR: join(dir, "data"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    servers.push(server);
    return childOutput(server).waitFor("zona listening");
  }

  const warningsIn = (output: string) =>
    output
      .split("\n")
      .filter((line) => line.includes("no chat model is set up"))
      .map((line) => JSON.parse(line) as { level: number; msg: string });

  it("without a configuration: one warning that no chat model is set up, naming docs/engines.md", async () => {
    const warnings = warningsIn(await startedOutput());
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.level).toBe(40);
    expect(warnings[0]?.msg).toContain("docs/engines.md");
  }, 60_000);

  it("with a chat model and a machine that serves it: no such warning", async () => {
    const yaml = [
      "installation:",
      "  zones: [{ id: here }]",
      "models:",
      "  - { id: gemma3.8-27b, kind: chat }",
      "machines:",
      "  - { name: m-1, zone: here, protocol: openai, url: 'http://127.0.0.1:9', models: [gemma3.8-27b] }",
      "",
    ].join("\n");
    expect(warningsIn(await startedOutput(yaml))).toEqual([]);
  }, 60_000);
});
