import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startVideoStack, type VideoStack } from "./video-stack.ts";

type Key = { key: string; keyId: string; accountId: string };

let s: VideoStack;
beforeAll(async () => {
  s = await startVideoStack();
});
afterAll(() => s.close());
afterEach(() => {
  for (const fake of [s.tiVideos, s.zhVideos]) fake.configure({ jobMs: 150, failMidJob: false });
});

/**
 * Makes one video for a person and waits for it to end (one job at a time per person). The clock moves
 * a second first: ids sort as their creation times, so each video is newer than the one before.
 */
async function makeVideo(key: Key, prompt = "a kite over a beach"): Promise<string> {
  s.clock.at += 1000;
  const answer = await s.create({ prompt }, { key: key.key });
  expect(answer.status, answer.bytes.toString()).toBe(200);
  const done = await s.waitFor(answer.body.id, ["completed", "failed"], { key: key.key });
  expect(done.status).toBe("completed");
  return answer.body.id;
}

const list = (key: Key, query = "") => s.call("GET", `/v1/videos${query}`, { key: key.key });
const ids = (body: { data: Array<{ id: string }> }) => body.data.map((video) => video.id);
/** A well-formed id that no video has. */
const missingId = () => `video_${randomBytes(16).toString("hex")}`;

describe('spec "Video": GET /v1/videos lists the person\'s videos', () => {
  let owner: Key;
  /** Oldest first. */
  const made: string[] = [];
  beforeAll(async () => {
    owner = await s.t.newKey();
    for (let i = 0; i < 5; i++) made.push(await makeVideo(owner, `kite number ${i}`));
  });
  const newestFirst = () => [...made].reverse();

  it("newest first by default, with first_id, last_id and has_more", async () => {
    const answer = await list(owner);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      object: "list",
      first_id: made[4],
      last_id: made[0],
      has_more: false,
    });
    expect(ids(answer.body)).toEqual(newestFirst());
    expect(answer.body.data[0]).toMatchObject({
      object: "video",
      status: "completed",
      prompt: "kite number 4",
    });
  });

  it.each([
    { query: "?order=asc", order: "oldest first" },
    { query: "?order=desc", order: "newest first" },
  ])("$query: $order", async ({ query }) => {
    const answer = await list(owner, query);
    expect(answer.status).toBe(200);
    expect(ids(answer.body)).toEqual(query === "?order=asc" ? made : newestFirst());
  });

  it.each(["desc", "asc"])("order=%s: pages of 2 follow the after cursor to the end", async (order) => {
    const expected = order === "asc" ? made : newestFirst();
    const pages: Array<{ ids: string[]; hasMore: boolean }> = [];
    let after = "";
    for (;;) {
      const answer = await list(owner, `?limit=2&order=${order}${after ? `&after=${after}` : ""}`);
      expect(answer.status).toBe(200);
      expect(answer.body.first_id).toBe(answer.body.data[0]?.id ?? null);
      expect(answer.body.last_id).toBe(answer.body.data.at(-1)?.id ?? null);
      pages.push({ ids: ids(answer.body), hasMore: answer.body.has_more });
      if (!answer.body.has_more) break;
      after = answer.body.last_id;
    }
    expect(pages).toEqual([
      { ids: expected.slice(0, 2), hasMore: true },
      { ids: expected.slice(2, 4), hasMore: true },
      { ids: expected.slice(4), hasMore: false },
    ]);
  });

  it.each([
    { query: "?limit=1", count: 1, hasMore: true },
    { query: "?limit=5", count: 5, hasMore: false },
    { query: "?limit=100", count: 5, hasMore: false },
    { query: `?after=video_${"f".repeat(32)}`, count: 5, hasMore: false },
  ])("$query: $count videos, has_more $hasMore", async ({ query, count, hasMore }) => {
    const answer = await list(owner, query);
    expect(answer.status).toBe(200);
    expect(answer.body.data).toHaveLength(count);
    expect(answer.body.has_more).toBe(hasMore);
  });

  it("a person with no video: an empty list", async () => {
    const answer = await list(await s.t.newKey());
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ object: "list", data: [], first_id: null, last_id: null, has_more: false });
  });

  it.each([
    { query: "?limit=0", code: "invalid_value", param: "limit" },
    { query: "?limit=101", code: "invalid_value", param: "limit" },
    { query: "?limit=abc", code: "invalid_value", param: "limit" },
    { query: "?limit=-1", code: "invalid_value", param: "limit" },
    { query: "?limit=2.5", code: "invalid_value", param: "limit" },
    { query: "?limit=1&limit=2", code: "invalid_value", param: "limit" },
    { query: "?order=newest", code: "invalid_value", param: "order" },
    { query: "?page=2", code: "unknown_parameter", param: "page" },
    { query: "?before=video_x", code: "unknown_parameter", param: "before" },
  ])("$query: 400 $code, param $param", async ({ query, code, param }) => {
    const answer = await list(owner, query);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code, param });
  });

  it("20 by default, at most 100", async () => {
    const many = await s.t.newKey();
    const all: string[] = [];
    for (let i = 0; i < 21; i++) all.push(await makeVideo(many, `balloon ${i}`));
    const first = await list(many);
    expect(ids(first.body)).toEqual([...all].reverse().slice(0, 20));
    expect(first.body.has_more).toBe(true);
    const rest = await list(many, `?after=${first.body.last_id}`);
    expect(ids(rest.body)).toEqual([all[0]]);
    expect(rest.body.has_more).toBe(false);
    expect(ids((await list(many, "?limit=100")).body)).toHaveLength(21);
  });

  it("two keys of the same account see the same videos (the person is the account)", async () => {
    const second = await s.t.admin("POST", `/accounts/${owner.accountId}/keys`, { name: "second" });
    expect(second.status).toBe(201);
    const other: Key = { key: second.body.key, keyId: second.body.id, accountId: owner.accountId };
    expect(ids((await list(other)).body)).toEqual(newestFirst());
    const one = made[2] as string;
    expect((await s.call("GET", `/v1/videos/${one}`, { key: other.key })).body.id).toBe(one);
    expect((await s.call("GET", `/v1/videos/${one}/content`, { key: other.key })).status).toBe(200);
  });
});

describe("spec \"Video\": a video is only its person's; another's is exactly like a missing one", () => {
  let owner: Key;
  let stranger: Key;
  let id: string;
  beforeAll(async () => {
    owner = await s.t.newKey();
    stranger = await s.t.newKey();
    id = await makeVideo(owner, "a lighthouse keeper's cat");
  });

  it.each([
    ["GET", ""],
    ["GET", "/content"],
    ["DELETE", ""],
  ])("%s /v1/videos/{id}%s: 404, the same status, code and message as a missing id", async (method, tail) => {
    const theirs = await s.call(method, `/v1/videos/${id}${tail}`, { key: stranger.key });
    const missing = await s.call(method, `/v1/videos/${missingId()}${tail}`, { key: stranger.key });
    expect(theirs.status).toBe(404);
    expect(missing.status).toBe(404);
    const { request_id: _a, ...theirError } = theirs.body.error;
    const { request_id: _b, ...missingError } = missing.body.error;
    expect(theirError).toEqual(missingError);
    expect(theirError.message).not.toContain(id);
    // The owner's video is untouched.
    expect((await s.call("GET", `/v1/videos/${id}`, { key: owner.key })).status).toBe(200);
  });

  it("the stranger's list does not show it", async () => {
    expect((await list(stranger)).body.data).toEqual([]);
  });

  it.each([
    ["GET", "abc"],
    ["GET", "video_xyz"],
    ["GET", `VIDEO_${"a".repeat(32)}`],
    ["GET", "abc/content"],
    ["GET", "video_%00/content"],
    ["DELETE", "abc"],
    ["DELETE", `video_${"a".repeat(33)}`],
  ])("%s a malformed id (%s): 404 like a missing one", async (method, path) => {
    const answer = await s.call(method, `/v1/videos/${path}`, { key: owner.key });
    const missing = await s.call(method, `/v1/videos/${missingId()}`, { key: owner.key });
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe(missing.body.error.code);
    expect(answer.body.error.message).toBe(missing.body.error.message);
  });
});

describe('spec "Video": content and deletion', () => {
  it("a completed video's content is video/mp4 bytes starting with an ftyp box", async () => {
    const key = await s.t.newKey();
    const id = await makeVideo(key);
    for (const query of ["", "?variant=video"]) {
      const answer = await s.call("GET", `/v1/videos/${id}/content${query}`, { key: key.key });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toMatch(/^video\/mp4/);
      expect(answer.bytes.length).toBeGreaterThan(1000);
      expect(answer.bytes.subarray(4, 8).toString("latin1")).toBe("ftyp");
    }
  });

  it.each([
    { query: "?variant=thumbnail", code: "invalid_value", param: "variant" },
    { query: "?variant=spritesheet", code: "invalid_value", param: "variant" },
    { query: "?format=webm", code: "unknown_parameter", param: "format" },
  ])("content $query: 400 $code, param $param", async ({ query, code, param }) => {
    const key = await s.t.newKey();
    const id = await makeVideo(key);
    const answer = await s.call("GET", `/v1/videos/${id}/content${query}`, { key: key.key });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code, param });
  });

  it("a failed video: its error is shown, its content is 409 video_failed", async () => {
    const key = await s.t.newKey();
    for (const fake of [s.tiVideos, s.zhVideos]) fake.configure({ failMidJob: true });
    const answer = await s.create({ prompt: "a failing kite" }, { key: key.key });
    const done = await s.waitFor(answer.body.id, ["completed", "failed"], { key: key.key });
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    const content = await s.call("GET", `/v1/videos/${answer.body.id}/content`, { key: key.key });
    expect(content.status).toBe(409);
    expect(content.body.error.code).toBe("video_failed");
  });

  it("DELETE: the video.deleted answer, then the video is gone (404, not listed, deleted again 404)", async () => {
    const key = await s.t.newKey();
    const keep = await makeVideo(key, "kept");
    const gone = await makeVideo(key, "deleted");
    const answer = await s.call("DELETE", `/v1/videos/${gone}`, { key: key.key });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: gone, object: "video.deleted", deleted: true });
    expect((await s.call("GET", `/v1/videos/${gone}`, { key: key.key })).status).toBe(404);
    expect((await s.call("GET", `/v1/videos/${gone}/content`, { key: key.key })).status).toBe(404);
    expect((await s.call("DELETE", `/v1/videos/${gone}`, { key: key.key })).status).toBe(404);
    expect(ids((await list(key)).body)).toEqual([keep]);
  });
});

describe('spec "States and transitions": one video job at a time per person', () => {
  it("while one is in progress and another person's is queued behind it: 409 video_not_ready, and a second request is 429 too_many_video_jobs", async () => {
    // One machine of capacity 1 for both persons: the first one's job runs, the second one's waits.
    for (const fake of [s.tiVideos, s.zhVideos]) fake.configure({ jobMs: 1500 });
    const first = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    const second = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    const running = await s.create({ prompt: "a slow river" }, { key: first.key });
    expect(running.status).toBe(200);
    await s.waitFor(running.body.id, ["in_progress"], { key: first.key });
    const waiting = await s.create({ prompt: "a slow glacier" }, { key: second.key });
    expect(waiting.status).toBe(200);

    const cases: Array<[Key, string, string]> = [
      [first, running.body.id, "in_progress"],
      [second, waiting.body.id, "queued"],
    ];
    for (const [key, id, status] of cases) {
      const now = await s.call("GET", `/v1/videos/${id}`, { key: key.key });
      expect(now.body.status).toBe(status);
      const content = await s.call("GET", `/v1/videos/${id}/content`, { key: key.key });
      expect(content.status).toBe(409);
      expect(content.body.error.code).toBe("video_not_ready");

      const before = s.tiVideos.jobs.length + s.zhVideos.jobs.length;
      const again = await s.create({ prompt: "one more" }, { key: key.key });
      expect(again.status).toBe(429);
      expect(again.body.error).toMatchObject({ code: "too_many_video_jobs" });
      expect(typeof again.body.error.message).toBe("string");
      expect(again.headers.get("x-should-retry")).toBe("false");
      expect(ids((await list(key)).body)).toEqual([id]);
      expect(await s.usage(key.keyId)).toEqual([]);
      expect(s.tiVideos.jobs.length + s.zhVideos.jobs.length).toBe(before);
    }

    // Once the job has ended (here: deleted), the person may make the next one.
    expect((await s.call("DELETE", `/v1/videos/${waiting.body.id}`, { key: second.key })).status).toBe(200);
    const done = await s.waitFor(running.body.id, ["completed", "failed"], { key: first.key });
    expect(done.status).toBe("completed");
    for (const fake of [s.tiVideos, s.zhVideos]) fake.configure({ jobMs: 150 });
    for (const key of [first, second]) {
      const next = await s.create({ prompt: "the next one" }, { key: key.key });
      expect(next.status).toBe(200);
      await s.waitFor(next.body.id, ["completed", "failed"], { key: key.key });
    }
  });

  it("another key of the same account is the same person: 429 too_many_video_jobs", async () => {
    for (const fake of [s.tiVideos, s.zhVideos]) fake.configure({ jobMs: 1000 });
    const owner = await s.t.newKey();
    const second = await s.t.admin("POST", `/accounts/${owner.accountId}/keys`, { name: "second" });
    const running = await s.create({ prompt: "a long train" }, { key: owner.key });
    expect(running.status).toBe(200);
    const again = await s.create({ prompt: "a second train" }, { key: second.body.key });
    expect(again.status).toBe(429);
    expect(again.body.error.code).toBe("too_many_video_jobs");
    // Another person is not held up.
    const stranger = await s.t.newKey();
    const theirs = await s.create({ prompt: "a boat" }, { key: stranger.key });
    expect(theirs.status).toBe(200);
    for (const [key, id] of [
      [owner.key, running.body.id],
      [stranger.key, theirs.body.id],
    ]) {
      expect((await s.call("DELETE", `/v1/videos/${id}`, { key })).status).toBe(200);
    }
  });
});
