/**
 * The money of video jobs (DESIGN "Money and limits", spec "Charging and reporting"): 5 seconds
 * are held at creation against the key's monthly limit or the prepaid credits, settled to the
 * clip's own seconds when it is delivered (once, however often the last step runs), released when
 * the job fails or is deleted.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FakeVideosServer } from "../fakes/fake-videos-server.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import {
  advance,
  closedSpend,
  engineJob,
  finish,
  keySpend,
  LONG_JOB_MS,
  SHORT_JOB_MS,
  until,
  videoFixture,
  withSeconds,
} from "./video-helpers.ts";
import { SECOND_MICROS, startVideoStack, type VideoStack } from "./video-stack.ts";

const money = (seconds: number) => (seconds * SECOND_MICROS) / 1e6;
/** What a 3-second clip is, made from the 5-second fixture. */
const THREE_SECOND_CLIP = withSeconds(videoFixture("clip.mp4"), 3);

/** The fakes' knobs back to the stack's defaults, and every job they hold ended. */
function resetFakes(fakes: FakeVideosServer[]): void {
  for (const fake of fakes) {
    fake.configure({ jobMs: SHORT_JOB_MS, failMidJob: false, garbageContent: false, clip: undefined });
    for (const job of fake.jobs) finish(job);
  }
}

function videoCreations(fakes: FakeVideosServer[]) {
  return fakes.flatMap((fake) => fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/videos"));
}

describe.each(
  STORE_KINDS,
)('spec "What the service does" (video per second of a completed clip) and "Charging and reporting": video money against a key\'s monthly limit (%s)', (store) => {
  let stack: VideoStack;
  let fakes: FakeVideosServer[];
  beforeAll(async () => {
    stack = await startVideoStack({ store });
    fakes = [stack.tiVideos, stack.zhVideos];
  });
  afterAll(() => stack?.close());
  beforeEach(() => {
    for (const fake of fakes) fake.clearRequests();
  });
  afterEach(() => resetFakes(fakes));

  const both = (settings: Parameters<FakeVideosServer["configure"]>[0]) => {
    for (const fake of fakes) fake.configure(settings);
  };
  const spend = (keyId: string) => keySpend(stack, keyId);
  const closed = (keyId: string) => closedSpend(stack, keyId);

  it("a monthly limit below 5 seconds of video: 402 spending_limit_reached, no job made, nothing sent to a machine", async () => {
    const p = await stack.t.newKey({ key: { monthly_limit: money(5) - 0.01 } });
    const refused = await stack.create({ prompt: "a windmill in a storm" }, { key: p.key });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject({ code: "spending_limit_reached" });
    expect((await stack.call("GET", "/v1/videos", { key: p.key })).body.data).toEqual([]);
    // No job was left behind: asking again is refused for the money again, not as a second job.
    const again = await stack.create({ prompt: "a windmill in a storm" }, { key: p.key });
    expect(again.status).toBe(402);
    expect(again.body.error.code).toBe("spending_limit_reached");
    expect(videoCreations(fakes)).toEqual([]);
    expect(fakes.flatMap((fake) => fake.jobs)).toEqual([]);
    const records = await stack.usage(p.keyId);
    expect(records.filter((record: { cost: number }) => record.cost !== 0)).toEqual([]);
    expect(await spend(p.keyId)).toMatchObject({ spent: 0, reserved: 0 });
  });

  it("a limit of exactly 5 seconds: accepted, 5 seconds held while the job runs, one usage record when it is delivered", async () => {
    both({ jobMs: LONG_JOB_MS });
    const p = await stack.t.newKey({ key: { monthly_limit: money(5) } });
    const prompt = "a sailing boat at sunset";
    const created = await stack.create({ prompt }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    expect(await spend(p.keyId)).toMatchObject({ spent: 0, reserved: money(5) });
    const { fake, job } = await engineJob(fakes, prompt);
    advance(job, 50);
    await until("the job to run", async () => {
      const answer = await stack.call("GET", `/v1/videos/${created.body.id}`, { key: p.key });
      return (answer.body.status === "in_progress" && answer.body.progress > 0) || undefined;
    });
    expect(await spend(p.keyId)).toMatchObject({ spent: 0, reserved: money(5) });
    expect(await stack.usage(p.keyId)).toEqual([]);

    finish(job);
    const done = await stack.waitFor(created.body.id, undefined, { key: p.key });
    expect(done).toMatchObject({ status: "completed", seconds: "5" });
    expect(await closed(p.keyId)).toMatchObject({ spent: money(5), reserved: 0 });
    const records = await stack.usage(p.keyId);
    expect(records).toHaveLength(1);
    const zone = fake === stack.tiVideos ? "ch-ti" : "ch-zh";
    const machine = fake === stack.tiVideos ? "ti-videos" : "zh-videos";
    expect(records[0]).toMatchObject({
      object: "usage_record",
      key_id: p.keyId,
      endpoint: "videos",
      model: "wan-2.2-5b-fast",
      units: { seconds: 5 },
      cost: money(5),
      zone,
      machine,
      outcome: "ok",
    });
    // The limit is used up: the next video does not fit.
    const next = await stack.create({ prompt: "a sailing boat at dawn" }, { key: p.key });
    expect(next.status).toBe(402);
    expect(next.body.error.code).toBe("spending_limit_reached");
  });

  it("settled to the clip's own seconds (a 3-second clip costs 3), once, even when the last step runs again", async () => {
    both({ clip: THREE_SECOND_CLIP });
    const p = await stack.t.newKey({ key: { monthly_limit: 1 } });
    const created = await stack.create({ prompt: "a short clip of a bird" }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id: string = created.body.id;
    const done = await stack.waitFor(id, undefined, { key: p.key });
    expect(done).toMatchObject({ status: "completed", seconds: "3" });
    expect(await closed(p.keyId)).toMatchObject({ spent: money(3), reserved: 0 });

    // The step of a completed job settles it (for a process that died in between): never twice.
    const runner = stack.t.app.services.videoRunner;
    await runner.step(id, new AbortController().signal);
    await Promise.all([
      runner.step(id, new AbortController().signal),
      runner.step(id, new AbortController().signal),
    ]);
    const records = await stack.usage(p.keyId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      endpoint: "videos",
      units: { seconds: 3 },
      cost: money(3),
      outcome: "ok",
    });
    expect(await spend(p.keyId)).toMatchObject({ spent: money(3), reserved: 0 });
    const summary = await stack.t.admin("GET", `/usage/summary?key_id=${p.keyId}`);
    expect(summary.body).toMatchObject({ requests: 1, cost: money(3) });
  });

  it("a failed job and a deleted job cost nothing: the whole limit stays free", async () => {
    const p = await stack.t.newKey({ key: { monthly_limit: money(5) } });
    both({ failMidJob: true, jobMs: 200 });
    const failing = await stack.create({ prompt: "a glacier calving" }, { key: p.key });
    expect(failing.status, failing.bytes.toString()).toBe(200);
    expect((await stack.waitFor(failing.body.id, undefined, { key: p.key })).status).toBe("failed");
    expect(await closed(p.keyId)).toMatchObject({ spent: 0, reserved: 0 });

    both({ failMidJob: false, jobMs: LONG_JOB_MS });
    const prompt = "a glacier at noon";
    const deleting = await stack.create({ prompt }, { key: p.key });
    expect(deleting.status, deleting.bytes.toString()).toBe(200);
    const { fake, job } = await engineJob(fakes, prompt);
    advance(job, 30);
    await until("the job to run", async () => {
      const answer = await stack.call("GET", `/v1/videos/${deleting.body.id}`, { key: p.key });
      return (answer.body.status === "in_progress" && answer.body.progress > 0) || undefined;
    });
    expect(await spend(p.keyId)).toMatchObject({ reserved: money(5) });
    expect((await stack.call("DELETE", `/v1/videos/${deleting.body.id}`, { key: p.key })).status).toBe(200);
    await until("the engine job to be deleted", () => fake.deletions.includes(job.id));
    expect(await closed(p.keyId)).toMatchObject({ spent: 0, reserved: 0 });

    const records = await stack.usage(p.keyId);
    expect(records.filter((record: { cost: number }) => record.cost !== 0)).toEqual([]);
    expect(records.filter((record: { outcome: string }) => record.outcome === "ok")).toEqual([]);

    // Both left the limit whole: a full video fits.
    both({ jobMs: SHORT_JOB_MS });
    const full = await stack.create({ prompt: "a glacier by night" }, { key: p.key });
    expect(full.status, full.bytes.toString()).toBe(200);
    expect((await stack.waitFor(full.body.id, undefined, { key: p.key })).status).toBe("completed");
    expect(await closed(p.keyId)).toMatchObject({ spent: money(5), reserved: 0 });
  });
});

describe('spec "Charging and reporting": video money on a prepaid installation', () => {
  let stack: VideoStack;
  let fakes: FakeVideosServer[];
  beforeAll(async () => {
    stack = await startVideoStack({
      config: {
        installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }], prepaid: true, currency: "credits" },
      },
    });
    fakes = [stack.tiVideos, stack.zhVideos];
  });
  afterAll(() => stack?.close());
  beforeEach(() => {
    for (const fake of fakes) fake.clearRequests();
  });
  afterEach(() => resetFakes(fakes));

  const credits = async (accountId: string) =>
    (await stack.t.admin("GET", `/accounts/${accountId}/credits`)).body;
  const settled = (accountId: string) =>
    until("the credits to be settled", async () => {
      const now = await credits(accountId);
      return now.held === 0 ? now : undefined;
    });

  it("credits for 5 seconds are held while the job runs, and only the clip's seconds are taken", async () => {
    for (const fake of fakes) fake.configure({ jobMs: LONG_JOB_MS, clip: THREE_SECOND_CLIP });
    const p = await stack.t.newKey();
    await stack.t.admin("PUT", `/accounts/${p.accountId}/credits`, { balance: 1 });
    const prompt = "a cable car over a valley";
    const created = await stack.create({ prompt }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    expect(await credits(p.accountId)).toMatchObject({ balance: 1, held: money(5) });
    const { job } = await engineJob(fakes, prompt);
    advance(job, 50);
    await until("the job to run", async () => {
      const answer = await stack.call("GET", `/v1/videos/${created.body.id}`, { key: p.key });
      return (answer.body.status === "in_progress" && answer.body.progress > 0) || undefined;
    });
    expect(await credits(p.accountId)).toMatchObject({ balance: 1, held: money(5) });

    finish(job);
    expect((await stack.waitFor(created.body.id, undefined, { key: p.key })).seconds).toBe("3");
    const after = await settled(p.accountId);
    expect(after.balance).toBeCloseTo(1 - money(3), 9);
    expect(await stack.usage(p.keyId)).toMatchObject([
      { units: { seconds: 3 }, cost: money(3), outcome: "ok" },
    ]);
  });

  it("credits below 5 seconds: 402 insufficient_credits and nothing sent; a failed job takes nothing", async () => {
    const p = await stack.t.newKey();
    await stack.t.admin("PUT", `/accounts/${p.accountId}/credits`, { balance: money(5) - 0.01 });
    const refused = await stack.create({ prompt: "a market square" }, { key: p.key });
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe("insufficient_credits");
    expect(videoCreations(fakes)).toEqual([]);
    expect((await stack.call("GET", "/v1/videos", { key: p.key })).body.data).toEqual([]);

    await stack.t.admin("PUT", `/accounts/${p.accountId}/credits`, { balance: money(5) });
    for (const fake of fakes) fake.configure({ failMidJob: true, jobMs: LONG_JOB_MS });
    const prompt = "a market square at night";
    const failing = await stack.create({ prompt }, { key: p.key });
    expect(failing.status, failing.bytes.toString()).toBe(200);
    expect(await credits(p.accountId)).toMatchObject({ balance: money(5), held: money(5) });
    finish((await engineJob(fakes, prompt)).job);
    expect((await stack.waitFor(failing.body.id, undefined, { key: p.key })).status).toBe("failed");
    expect(await settled(p.accountId)).toMatchObject({ balance: money(5), held: 0 });
  });
});
