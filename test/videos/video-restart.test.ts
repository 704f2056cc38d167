import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readDataDirOwner } from "../../src/store/data-dir-lock.ts";
import { openStore } from "../../src/store/open-store.ts";
import { FakeModerationServer, FakeVideosServer } from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { createTestDatabase } from "../helpers/test-store.ts";
import { readAnswer, SECOND_MICROS, startVideoStack, type VideoStack } from "./video-stack.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const ADMIN = "restart-test-admin-token-0123";
const TEST_REDIS_URL = process.env.TEST_REDIS_URL;
const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

/** The fakes a Zona and its successor both use. */
async function startFakes(jobMs: number) {
  const fakes = {
    tiVideos: new FakeVideosServer({ jobMs }),
    zhVideos: new FakeVideosServer({ jobMs }),
    tiModeration: new FakeModerationServer(),
    zhModeration: new FakeModerationServer(),
  };
  await Promise.all(Object.values(fakes).map((fake) => fake.start()));
  return {
    ...fakes,
    engineJobs: () => [...fakes.tiVideos.jobs, ...fakes.zhVideos.jobs],
    close: () => Promise.all(Object.values(fakes).map((fake) => fake.close())),
  };
}

type Fakes = Awaited<ReturnType<typeof startFakes>>;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0)
    await cleanups
      .pop()?.()
      .catch(() => undefined);
});

/**
 * Waits until the condition holds (polling), or fails after 60 s: a Zona process started or killed
 * on a busy 2-core machine took over 20 s for a step.
 */
async function until(what: string, condition: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The usage of a video job as the successor sees it: exactly one record, charged once. */
async function expectBilledOnce(stack: VideoStack): Promise<void> {
  await until("the usage record", async () => (await stack.usage()).length > 0);
  const records = await stack.usage();
  expect(records).toHaveLength(1);
  expect(records[0]).toMatchObject({ endpoint: "videos", units: { seconds: 5 }, outcome: "ok" });
  expect(records[0].cost).toBeCloseTo((5 * SECOND_MICROS) / 1e6, 6);
}

describe('spec "Video job": a job survives a restart of Zona, follows the engine\'s job and is billed once', () => {
  it("embedded: the process is killed (SIGKILL) while the engine makes the clip; the next start on the same data folder completes it", async () => {
    const fakes = await startFakes(2_500);
    cleanups.push(fakes.close);
    const dataDir = mkdtempSync(join(tmpdir(), "zona-video-restart-"));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const config = stackConfig(fakes);
    const configFile = join(dataDir, "zona.json.yaml");
    writeFileSync(configFile, JSON.stringify(config));

    const first = await startZona(dataDir, configFile);
    cleanups.push(first.kill);
    const { key, keyId, accountId } = await first.newKey();
    const created = await readAnswer(
      await fetch(`${first.url}/v1/videos`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "a train crossing a bridge", seed: 11 }),
      }),
    );
    expect(created.status, created.bytes.toString()).toBe(200);
    const id = created.body.id as string;
    await until("the engine to start the job", () => fakes.engineJobs().length === 1);
    await until("the job to be in progress", async () => {
      const answer = await readAnswer(
        await fetch(`${first.url}/v1/videos/${id}`, { headers: { authorization: `Bearer ${key}` } }),
      );
      return answer.body?.status === "in_progress";
    });
    await first.kill();
    // npm is gone; the node process it started dies a moment later.
    await until("the killed Zona to be gone", () => readDataDirOwner(dataDir) === undefined);

    const store = await openStore({ dataDir });
    const stack = await startVideoStack({ store, fakes, existingKey: { key, keyId, accountId } });
    cleanups.push(async () => {
      await stack.close();
      await store.close();
    });
    const done = await stack.waitFor(id);
    expect(done.status).toBe("completed");
    // The running engine job was followed, not started again.
    expect(fakes.engineJobs()).toHaveLength(1);
    const clip = await stack.call("GET", `/v1/videos/${id}/content`);
    expect(clip.status).toBe(200);
    await expectBilledOnce(stack);
  }, 90_000);

  it.runIf(TEST_REDIS_URL && TEST_DATABASE_URL)(
    "distributed (PostgreSQL and BullMQ): Zona stops while the job runs; another Zona on the same database and Redis completes it",
    async () => {
      const fakes = await startFakes(1_500);
      cleanups.push(fakes.close);
      const database = await createTestDatabase();
      cleanups.push(database.drop);
      const server = {
        database_url: database.url,
        redis_url: TEST_REDIS_URL,
        redis_prefix: `zona-test-restart-${Date.now()}`,
      };
      const firstStore = await openStore({ databaseUrl: database.url });
      const first = await startVideoStack({ store: firstStore, fakes, config: { server } });
      const created = await first.create({ prompt: "a paper boat in the rain" });
      expect(created.status, created.bytes.toString()).toBe(200);
      const id = created.body.id as string;
      await first.waitFor(id, ["in_progress"]);
      await until("the engine to start the job", () => fakes.engineJobs().length === 1);
      await first.close();
      await firstStore.close();

      const store = await openStore({ databaseUrl: database.url });
      const second = await startVideoStack({
        store,
        fakes,
        config: { server },
        existingKey: { key: first.key, keyId: first.keyId, accountId: first.accountId },
      });
      cleanups.push(async () => {
        await second.close();
        await store.close();
      });
      const done = await second.waitFor(id);
      expect(done.status).toBe("completed");
      expect(fakes.engineJobs()).toHaveLength(1);
      await expectBilledOnce(second);
    },
    90_000,
  );
});

/** The configuration of the stack's installation, for a Zona started as a process. */
function stackConfig(fakes: Fakes) {
  return {
    server: { admin_token: ADMIN, log_level: "info" },
    installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }] },
    tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
    prices: { video_per_second: 0.02 },
    engines: { video_poll_interval_seconds: 0.05 },
    models: [{ id: "wan-2.2-5b-fast", kind: "video" }],
    machines: [
      {
        name: "ti-videos",
        zone: "ch-ti",
        protocol: "videos",
        url: fakes.tiVideos.url,
        models: ["wan-2.2-5b-fast"],
        capacity: 1,
      },
      {
        name: "zh-videos",
        zone: "ch-zh",
        protocol: "videos",
        url: fakes.zhVideos.url,
        models: ["wan-2.2-5b-fast"],
        capacity: 1,
      },
      { name: "ti-moderation", zone: "ch-ti", protocol: "moderation", url: fakes.tiModeration.url },
      { name: "zh-moderation", zone: "ch-zh", protocol: "moderation", url: fakes.zhModeration.url },
    ],
  };
}

/** Zona as its own process (`npm start`) on a data folder; `kill` sends SIGKILL to its process group. */
async function startZona(dataDir: string, configFile: string) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn("npm", ["start", "--silent"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: String(port),
      HOST: "127.0.0.1",
      ZONA_DATA_DIR: dataDir,
      ZONA_CONFIG: configFile,
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await until("Zona to listen", () => {
    if (child.exitCode !== null) throw new Error(`Zona stopped:\n${output}`);
    return output.includes("zona listening");
  });
  const admin = async (path: string, body: unknown) => {
    const response = await fetch(`${url}/admin/v1${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return (await response.json()) as Record<string, string>;
  };
  return {
    url,
    async newKey() {
      const account = await admin("/accounts", {
        email: `restart-${Date.now()}@example.com`,
        email_verified: true,
      });
      const key = await admin(`/accounts/${account.id}/keys`, { name: "restart" });
      return { key: key.key as string, keyId: key.id as string, accountId: account.id as string };
    },
    async kill() {
      if (child.exitCode !== null || child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone already
      }
      await exited;
    },
  };
}
