/**
 * Helpers of the video job tests: waiting by polling, moving fake engine jobs on, the fixtures as
 * engines' clips, and a clip of another length for the billing of seconds.
 */
import { readFileSync } from "node:fs";
import { inArray } from "drizzle-orm";
import { videoJobs } from "../../src/store/schema.ts";
import type { FakeVideoJob, FakeVideosServer } from "../fakes/fake-videos-server.ts";
import { body, find, kids, traks, under } from "../media/mp4-walk.ts";
import type { VideoStack } from "./video-stack.ts";

/** The name the video machines' engine knows the model by. */
export const VIDEO_UPSTREAM = "Wan-AI/Wan2.2-TI2V-5B-Diffusers";
/** A fake job that does not end by itself during a test; tests end it by editing it. */
export const LONG_JOB_MS = 10 * 60_000;
/** A fake job that ends by itself at once. */
export const SHORT_JOB_MS = 150;

/** Polls `probe` until it gives something (not undefined or false); fails after 20 s. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const found = await probe();
    if (found !== undefined && found !== false) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

/** Waits until no job of the stack is queued or in progress (what a test left behind has ended). */
export async function everyJobEnded(stack: VideoStack): Promise<void> {
  await until("every job to end", async () => {
    const open = await stack.t.store.db
      .select({ id: videoJobs.id })
      .from(videoJobs)
      .where(inArray(videoJobs.status, ["queued", "in_progress"]));
    return open.length === 0;
  });
}

/** A key's money this month: `key_spend` of the usage summary (`spent`, `reserved`, `monthly_limit`). */
// biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
export async function keySpend(stack: VideoStack, keyId: string): Promise<any> {
  return (await stack.t.admin("GET", `/usage/summary?key_id=${keyId}`)).body.key_spend;
}

/**
 * A key's money once nothing is held any more. A job's end is stored a moment before its money is
 * settled or released, so a client may see it ended a moment earlier.
 */
export function closedSpend(stack: VideoStack, keyId: string) {
  return until("the reservation to be closed", async () => {
    const now = await keySpend(stack, keyId);
    return now.reserved === 0 ? now : undefined;
  });
}

/** Makes a fake job report at least `percent` done (it goes on rising slowly by itself). */
export function advance(job: FakeVideoJob, percent: number): void {
  job.createdAt = Date.now() - (job.jobMs * percent) / 100;
}

/** Ends a fake job: completed (or failed, if it was to fail) at its next look. */
export function finish(job: FakeVideoJob): void {
  job.jobMs = 0;
}

/** The engine job made for a prompt, on whichever of the fakes, once there is one. */
export function engineJob(
  fakes: FakeVideosServer[],
  prompt: string,
): Promise<{ fake: FakeVideosServer; job: FakeVideoJob }> {
  return until(`an engine job for "${prompt}"`, () => {
    for (const fake of fakes) {
      const job = fake.jobs.find((candidate) => candidate.prompt === prompt);
      if (job) return { fake, job };
    }
    return undefined;
  });
}

/** A file of test/fixtures/video/ (see its README). */
export function videoFixture(name: string): Buffer {
  return readFileSync(new URL(`../fixtures/video/${name}`, import.meta.url));
}

/**
 * The clip as a shorter one: the durations of the movie, of every track and of their edit lists
 * say `seconds` (the samples are unchanged, so a player stops there). Sizes stay the same, so no
 * offset moves.
 */
export function withSeconds(mp4: Buffer, seconds: number): Buffer {
  const out = Buffer.from(mp4);
  const moov = find(out, "moov");
  if (!moov) throw new Error("no moov");
  const movieScale = setDuration(out, under(out, moov, "mvhd"), seconds);
  for (const trak of traks(out)) {
    const tkhd = under(out, trak, "tkhd");
    const data = body(out, tkhd);
    if (data[0] === 1) data.writeBigUInt64BE(BigInt(seconds * movieScale), 28);
    else data.writeUInt32BE(seconds * movieScale, 20);
    setDuration(out, under(out, trak, "mdia", "mdhd"), seconds);
    const edts = kids(out, trak).find((box) => box.type === "edts");
    const elst = edts ? kids(out, edts).find((box) => box.type === "elst") : undefined;
    if (elst) {
      const list = body(out, elst);
      if (list.readUInt32BE(4) !== 1) throw new Error("fixture with several edits");
      if (list[0] === 1) list.writeBigUInt64BE(BigInt(seconds * movieScale), 8);
      else list.writeUInt32BE(seconds * movieScale, 8);
    }
  }
  return out;
}

// mvhd and mdhd: version and flags, two times, the timescale, the duration (32 or 64 bits).
function setDuration(mp4: Buffer, box: ReturnType<typeof under>, seconds: number): number {
  const data = body(mp4, box);
  const wide = data[0] === 1;
  const timescale = data.readUInt32BE(wide ? 20 : 12);
  if (wide) data.writeBigUInt64BE(BigInt(seconds * timescale), 24);
  else data.writeUInt32BE(seconds * timescale, 16);
  return timescale;
}
