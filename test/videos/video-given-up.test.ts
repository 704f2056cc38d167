/**
 * DESIGN.md "Untrusted work" and docs/reliability.md "Poison jobs", for video jobs: a job whose steps
 * ended with the process dead twice (`server.job_crash_limit`) is given up by the durable queue at
 * its next claim, and ends as any failed job does: `failed` with a reason, its money released,
 * nothing charged, its job on the machine deleted. The deaths are written into the job's queue row
 * as a dead process leaves them (test/jobs/poison-jobs.test.ts makes real ones).
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { videoQueueId } from "../../src/services/videos/video-queue.ts";
import { durableJobs } from "../../src/store/schema.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { closedSpend, keySpend } from "./video-helpers.ts";
import { SECOND_MICROS, startVideoStack, type VideoStack } from "./video-stack.ts";

const money = (seconds: number) => (seconds * SECOND_MICROS) / 1e6;

describe.each(STORE_KINDS)("Poison jobs: a video job given up by the durable queue (%s)", (kind) => {
  let stack: VideoStack;
  beforeAll(async () => {
    stack = await startVideoStack({ store: kind });
    // The clip takes long: the job is in progress when its queue gives it up.
    for (const fake of [stack.tiVideos, stack.zhVideos]) fake.configure({ jobMs: 600_000 });
  });
  afterAll(() => stack.close());

  it("Untrusted work: a video job whose steps stopped the service twice fails with a reason, its money released and nothing charged", async () => {
    const p = await stack.t.newKey({ key: { monthly_limit: money(5) } });
    const created = await stack.create({ prompt: "a lighthouse at dusk" }, { key: p.key });
    expect(created.status, created.bytes.toString()).toBe(200);
    const id = created.body.id as string;
    await stack.waitFor(id, ["in_progress"], { key: p.key });
    expect(await keySpend(stack, p.keyId)).toMatchObject({ reserved: money(5) });

    await stack.t.store.db
      .update(durableJobs)
      .set({ deaths: 2 })
      .where(eq(durableJobs.id, videoQueueId(id)));
    const failed = await stack.waitFor(id, ["failed"], { key: p.key });
    expect(failed.error).toEqual({
      code: "server_error",
      message: "Making this video stopped the service 2 times; it was set aside. Nothing was charged.",
    });
    expect(await closedSpend(stack, p.keyId)).toMatchObject({ spent: 0, reserved: 0 });
    const records = await stack.usage(p.keyId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ endpoint: "videos", outcome: "failed", cost: 0 });
    const engineJob = [...stack.tiVideos.jobs, ...stack.zhVideos.jobs][0];
    await expect
      .poll(() => [...stack.tiVideos.deletions, ...stack.zhVideos.deletions])
      .toContain(engineJob?.id);
    expect(await stack.t.store.db.select().from(durableJobs)).toEqual([]);
  });
});
