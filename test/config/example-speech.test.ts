import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { childOutput } from "../helpers/child-output.ts";
import { freePort } from "../helpers/free-port.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const ADMIN_TOKEN = "example-speech-admin-token";
const NO_MODERATION = "checks content but has no moderation machine";

/**
 * The example configuration as the README has it copied (`cp zona.example.yaml zona.yaml`), its
 * machines not running yet: their addresses point at a closed port on this machine (no name is
 * looked up), as a machine that does not exist yet answers.
 */
async function copiedExample(change: (yaml: string) => string = (yaml) => yaml): Promise<string> {
  const closed = `http://127.0.0.1:${await freePort()}`;
  const yaml = readFileSync(join(ROOT, "zona.example.yaml"), "utf8").replace(
    /url: https?:\/\/[^\s#]+/g,
    `url: ${closed}`,
  );
  return change(yaml);
}

interface Started {
  url: string;
  server: ChildProcess;
  output: ReturnType<typeof childOutput>;
  dir: string;
}

describe("the example configuration, copied as the README says (docs/configuration.md, installation.content_checks)", () => {
  const servers: ChildProcess[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const server of servers) server.kill("SIGKILL");
    for (const dir of dirs) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  });

  async function start(yaml: string): Promise<Started> {
    const dir = mkdtempSync(join(tmpdir(), "zona-example-"));
    dirs.push(dir);
    writeFileSync(join(dir, "zona.yaml"), yaml);
    const port = await freePort();
    const server = spawn(process.execPath, [join(ROOT, "src/main.ts")], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: String(port),
        HOST: "127.0.0.1",
        ZONA_DATA_DIR: join(dir, "data"),
        ZONA_ADMIN_TOKEN: ADMIN_TOKEN,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    servers.push(server);
    const output = childOutput(server);
    await output.waitFor("zona listening");
    return { url: `http://127.0.0.1:${port}`, server, output, dir };
  }

  async function apiKey(zona: Started): Promise<string> {
    const admin = async (path: string, body: unknown) => {
      const response = await fetch(`${zona.url}/admin/v1${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status, path).toBe(201);
      return (await response.json()) as { id: string; key: string };
    };
    const account = await admin("/accounts", { email: "speech@example.com" });
    return (await admin(`/accounts/${account.id}/keys`, { name: "speech" })).key;
  }

  const speech = (zona: Started, key: string) =>
    fetch(`${zona.url}/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tts-1", input: "Buongiorno, questa è una prova.", voice: "paola" }),
    });

  const warnings = (output: string) =>
    output
      .split("\n")
      .filter((line) => line.includes(NO_MODERATION))
      .map((line) => JSON.parse(line) as { level: number; zone: string; answers_503: string[]; msg: string });

  it("speech answers right after the copy, from the built-in engine, and no zone is warned of", async () => {
    const zona = await start(await copiedExample());
    const response = await speech(zona, await apiKey(zona));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/wav");
    expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect(warnings(zona.output.text())).toEqual([]);
  }, 90_000);

  it("a zone that checks content without a moderation machine: one warning at start and one after each reload, naming the zone and what answers 503 (and speech does: spec Speech, 503 moderation_unavailable type server_error when the check cannot answer)", async () => {
    // The way the example used to be: the fallback zone checked, its moderation machine absent.
    const checked = (yaml: string) => yaml.replace("    ch-fallback: none", "    ch-fallback: moderation");
    const zona = await start(await copiedExample(checked));
    const atStart = warnings(zona.output.text());
    expect(atStart).toHaveLength(1);
    expect(atStart[0]).toMatchObject({ level: 40, zone: "ch-fallback", answers_503: ["speech"] });
    expect(atStart[0]?.msg).toContain("503 moderation_unavailable");
    expect(atStart[0]?.msg).toContain("installation.content_checks.ch-fallback: none");

    const response = await speech(zona, await apiKey(zona));
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: unknown }).error).toMatchObject({
      type: "server_error",
      code: "moderation_unavailable",
    });

    // A reload says it again, once.
    zona.server.kill("SIGHUP");
    await expect.poll(() => warnings(zona.output.text()).length, { timeout: 15_000 }).toBe(2);

    // Fixed in the file (the zone unchecked again): the next reload warns of nothing.
    const reloads = () =>
      zona.output
        .text()
        .split("\n")
        .filter((line) => line.includes("configuration reloaded"));
    expect(reloads()).toHaveLength(1);
    writeFileSync(join(zona.dir, "zona.yaml"), await copiedExample());
    zona.server.kill("SIGHUP");
    await expect.poll(() => reloads().length, { timeout: 15_000 }).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(warnings(zona.output.text())).toHaveLength(2);
  }, 90_000);
});
