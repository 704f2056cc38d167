import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Answer, startVideoStack, type VideoStack } from "./video-stack.ts";

type Key = { key: string; keyId: string };

/**
 * One person (account) per case: `owner` made `video` (completed) and `probe`, another key of the same
 * account, has every endpoint counter untouched: counters are per key, the videos per account.
 */
interface Person {
  owner: Key;
  probe: Key;
  video: string;
}

/** One limited endpoint: a request that counts (`hit`, the i-th one) and a request that shows it answers. */
interface Endpoint {
  name: string;
  limit: number;
  hit(person: Person, i: number): Promise<Answer>;
  /** The status of each counted request below the limit. */
  hitStatus(i: number): number;
  /** A plain use of the endpoint by the probe key, and the status it gets when the counter has room. */
  use(person: Person): Promise<Answer>;
  useStatus: number;
}

const PROMPT = "a kite over a beach";

let s: VideoStack;
beforeAll(async () => {
  s = await startVideoStack({ specEndpointLimits: true });
});
afterAll(() => s.close());

const missingId = () => `video_${randomBytes(16).toString("hex")}`;
const get = (key: Key, path: string) => s.call("GET", path, { key: key.key });

const ENDPOINTS: Endpoint[] = [
  {
    name: "POST /v1/videos",
    limit: 20,
    // The first makes a video; the others are refused (400) but counted all the same.
    hit: (p, i) =>
      s.create(i === 0 ? { prompt: PROMPT } : { prompt: PROMPT, quality: "hd" }, { key: p.probe.key }),
    hitStatus: (i) => (i === 0 ? 200 : 400),
    use: (p) => s.create({ prompt: `${PROMPT} again` }, { key: p.probe.key }),
    useStatus: 200,
  },
  {
    name: "GET /v1/videos",
    limit: 120,
    hit: (p) => get(p.probe, "/v1/videos"),
    hitStatus: () => 200,
    use: (p) => get(p.probe, "/v1/videos"),
    useStatus: 200,
  },
  {
    name: "GET /v1/videos/{id}",
    limit: 600,
    hit: (p) => get(p.probe, `/v1/videos/${p.video}`),
    hitStatus: () => 200,
    use: (p) => get(p.probe, `/v1/videos/${p.video}`),
    useStatus: 200,
  },
  {
    name: "GET /v1/videos/{id}/content",
    limit: 120,
    hit: (p) => get(p.probe, `/v1/videos/${p.video}/content`),
    hitStatus: () => 200,
    use: (p) => get(p.probe, `/v1/videos/${p.video}/content`),
    useStatus: 200,
  },
  {
    name: "DELETE /v1/videos/{id}",
    limit: 60,
    // Ids no video has (404), counted all the same; the plain use deletes the person's video.
    hit: (p) => s.call("DELETE", `/v1/videos/${missingId()}`, { key: p.probe.key }),
    hitStatus: () => 404,
    use: (p) => s.call("DELETE", `/v1/videos/${p.video}`, { key: p.probe.key }),
    useStatus: 200,
  },
];

/** A new account whose first key made one video (completed), and a second key of the same account. */
async function newPerson(): Promise<Person> {
  const owner = await s.t.newKey();
  const second = await s.t.admin("POST", `/accounts/${owner.accountId}/keys`, { name: "probe" });
  expect(second.status).toBe(201);
  const created = await s.create({ prompt: PROMPT }, { key: owner.key });
  expect(created.status).toBe(200);
  const done = await s.waitFor(created.body.id, ["completed", "failed"], { key: owner.key });
  expect(done.status).toBe("completed");
  return { owner, probe: { key: second.body.key, keyId: second.body.id }, video: created.body.id };
}

/** Sends `count` counted requests, at most `batch` at a time; the first ones alone, in order. */
async function hitMany(endpoint: Endpoint, person: Person, count: number, batch = 40): Promise<Answer[]> {
  const answers: Answer[] = [await endpoint.hit(person, 0)];
  for (let from = 1; from < count; from += batch) {
    const size = Math.min(batch, count - from);
    answers.push(
      ...(await Promise.all(Array.from({ length: size }, (_, j) => endpoint.hit(person, from + j)))),
    );
  }
  return answers;
}

const jobsSent = () => s.tiVideos.jobs.length + s.zhVideos.jobs.length;

describe('spec "Rate limits": each video endpoint has its own counter per key, with the spec\'s number', () => {
  it.each(
    ENDPOINTS,
  )("$name: $limit a minute; the next is 429 Too Many Attempts. while the four others still answer", async (endpoint) => {
    const person = await newPerson();
    const answers = await hitMany(endpoint, person, endpoint.limit);
    answers.forEach((answer, i) => {
      expect(answer.status, `request ${i + 1}: ${answer.bytes.toString().slice(0, 200)}`).toBe(
        endpoint.hitStatus(i),
      );
      expect(answer.headers.get("x-ratelimit-limit")).toBe(String(endpoint.limit));
    });
    // Every counted request took one place: remaining went limit-1, ..., 0, each once.
    const remaining = answers.map((answer) => Number(answer.headers.get("x-ratelimit-remaining")));
    expect(remaining.sort((a, b) => a - b)).toEqual(Array.from({ length: endpoint.limit }, (_, i) => i));

    // The video the first counted request made is made in the background: once it is, a job sent
    // after this point can only come from the refused request below (the owner's key reads it: the
    // probe's counters are the ones under test).
    if (endpoint.name === "POST /v1/videos") {
      const made = (answers[0]?.body as { id?: string } | undefined)?.id ?? "";
      await s.waitFor(made, ["completed", "failed"], { key: person.owner.key });
    }
    const sentBefore = jobsSent();
    const refused = await endpoint.use(person);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: "Too Many Attempts." });
    expect(refused.headers.get("x-ratelimit-limit")).toBe(String(endpoint.limit));
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const reset = Number(refused.headers.get("x-ratelimit-reset"));
    expect(Math.abs(reset - (s.clock.at / 1000 + retryAfter))).toBeLessThanOrEqual(1);
    // A stopped request is not run: nothing made or deleted.
    expect(jobsSent()).toBe(sentBefore);
    expect((await get(person.owner, `/v1/videos/${person.video}`)).status).toBe(200);

    // The four other endpoints, each on its own counter, still answer the same key (in the table's
    // order: DELETE last, as it deletes the video the others read).
    const others = ENDPOINTS.filter((other) => other !== endpoint);
    for (const other of others) {
      const answer = await other.use(person);
      expect(answer.status, `${other.name}: ${answer.bytes.toString().slice(0, 200)}`).toBe(other.useStatus);
      expect(answer.headers.get("x-ratelimit-limit")).toBe(String(other.limit));
      // The video made by the plain use of POST ends before the next case.
      if (answer.body?.object === "video")
        await s.waitFor(answer.body.id, ["completed", "failed"], { key: person.owner.key });
    }
  }, 60_000);

  it("a request stopped by POST's counter costs nothing and makes no job; a minute later it passes", async () => {
    const person = await newPerson();
    const made = await hitMany(ENDPOINTS[0] as Endpoint, person, 20);
    const first = made[0]?.body.id as string;
    await s.waitFor(first, ["completed", "failed"], { key: person.owner.key });
    const sentBefore = jobsSent();
    const refused = await s.create({ prompt: "one kite too many" }, { key: person.probe.key });
    expect(refused.status).toBe(429);
    expect(jobsSent()).toBe(sentBefore);
    const listed = await get(person.owner, "/v1/videos");
    expect(listed.body.data.map((video: { id: string }) => video.id).sort()).toEqual(
      [first, person.video].sort(),
    );
    // The one video made is charged (settled just after it completes); the stopped request nothing.
    let usage = await s.usage(person.probe.keyId);
    for (let tries = 0; usage.length === 0 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      usage = await s.usage(person.probe.keyId);
    }
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ units: { seconds: 5 }, outcome: "ok" });

    const start = s.clock.at;
    try {
      s.clock.at = start + 61_000;
      const next = await s.create({ prompt: "a kite next minute" }, { key: person.probe.key });
      expect(next.status).toBe(200);
      expect(next.headers.get("x-ratelimit-remaining")).toBe("19");
      await s.waitFor(next.body.id, ["completed", "failed"], { key: person.owner.key });
    } finally {
      s.clock.at = start;
    }
  });

  it("the counters are per key: another key of the same account still has its own 20", async () => {
    const person = await newPerson();
    const made = await hitMany(ENDPOINTS[0] as Endpoint, person, 21);
    expect(made.filter((answer) => answer.status === 429)).toHaveLength(1);
    const answer = await s.create({ prompt: PROMPT, quality: "hd" }, { key: person.owner.key });
    expect(answer.status).toBe(400);
    // The owner key made one video in newPerson: 18 left.
    expect(answer.headers.get("x-ratelimit-remaining")).toBe("18");
    await s.waitFor(made[0]?.body.id, ["completed", "failed"], { key: person.owner.key });
  });
});
