import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeVideosServer } from "../fakes/index.ts";
import { type Answer, readAnswer, startVideoStack, type VideoStack } from "./video-stack.ts";

// A field of a request: a value (a form sends it as text), a list (a form repeats the field), or a file part.
type Value = string | number | null | Record<string, unknown> | { file: Buffer } | Value[];
type Fields = Record<string, Value>;
type Via = "json" | "form";

const isFile = (value: Value): value is { file: Buffer } =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Buffer.isBuffer(value.file);

/** POSTs fields to /v1/videos as JSON or as a multipart form (what the official SDK sends: numbers as text). */
async function send(s: VideoStack, via: Via, fields: Fields, key = s.key): Promise<Answer> {
  if (via === "json") return s.create(fields, { key });
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (isFile(one)) form.append(name, new Blob([one.file], { type: "image/png" }), "reference.png");
      else form.append(name, typeof one === "string" ? one : JSON.stringify(one));
    }
  }
  const response = await s.t.fetch("/v1/videos", {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  return readAnswer(response);
}

const jobsOf = (...fakes: FakeVideosServer[]) => fakes.flatMap((fake) => fake.jobs);
const allJobs = (s: VideoStack) => jobsOf(s.tiVideos, s.zhVideos);

/** A refused request left nothing behind: no job listed, no usage record, nothing sent to a machine. */
async function expectNothingLeft(s: VideoStack, key: { key: string; keyId: string }, sentBefore: number) {
  const list = await s.call("GET", "/v1/videos", { key: key.key });
  expect(list.status).toBe(200);
  expect(list.body.data).toEqual([]);
  expect(await s.usage(key.keyId)).toEqual([]);
  expect(allJobs(s)).toHaveLength(sentBefore);
}

const PROMPT = "a paper boat drifting down a rain gutter";
const EMOJI = "🌊"; // one character, two UTF-16 units, four bytes of UTF-8
const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");

let s: VideoStack;
beforeAll(async () => {
  s = await startVideoStack({
    config: {
      models: [
        { id: "wan-2.2-5b-fast", kind: "video" },
        { id: "z-image-turbo", kind: "image" },
      ],
    },
  });
});
afterAll(() => s.close());

type Refusal = { rule: string; fields: Fields; code: string; param: string; via?: Via[] };
const MISSING = "missing_required_parameter";
const INVALID = "invalid_value";
const TOO_LONG = "string_above_max_length";
const refusal = (rule: string, fields: Fields, code: string, param: string, via?: Via[]): Refusal => ({
  rule,
  fields,
  code,
  param,
  ...(via ? { via } : {}),
});
const JSON_ONLY: Via[] = ["json"];
const FORM_ONLY: Via[] = ["form"];

// Each refusal rule of spec "Video" (and "Limits": prompt 2,000 characters) as one case, sent as JSON and
// as a form unless `via` says otherwise.
const REFUSED: Refusal[] = [
  refusal("prompt missing", { size: "1280x704" }, MISSING, "prompt"),
  refusal("prompt empty", { prompt: "" }, MISSING, "prompt"),
  refusal("prompt only blanks", { prompt: "   " }, MISSING, "prompt"),
  refusal("prompt null", { prompt: null }, MISSING, "prompt", JSON_ONLY),
  refusal("prompt not a string", { prompt: 42 }, INVALID, "prompt", JSON_ONLY),
  refusal("prompt of 2,001 characters", { prompt: "a".repeat(2001) }, TOO_LONG, "prompt"),
  refusal(
    "prompt of 2,001 emoji (characters, not bytes)",
    { prompt: EMOJI.repeat(2001) },
    TOO_LONG,
    "prompt",
  ),
  refusal("prompt longer than a form field is read", { prompt: "a".repeat(20_000) }, TOO_LONG, "prompt"),
  ...[4, "4", "8", 10, "abc", 5.5, "", "05x"].map((seconds) =>
    refusal(`seconds ${JSON.stringify(seconds)}`, { prompt: PROMPT, seconds }, INVALID, "seconds"),
  ),
  ...["1280x720", "720x1280", "1920x1080", "1024x1024", "1280x705", "auto", "1280X704"].map((size) =>
    refusal(`size ${size} (never rounded)`, { prompt: PROMPT, size }, INVALID, "size"),
  ),
  refusal("size not a string", { prompt: PROMPT, size: 1280 }, INVALID, "size", JSON_ONLY),
  ...[-1, 2_147_483_648, 1.5, "x", "99999999999"].map((seed) =>
    refusal(`seed ${JSON.stringify(seed)}`, { prompt: PROMPT, seed }, INVALID, "seed"),
  ),
  refusal(
    "input_reference as a field",
    { prompt: PROMPT, input_reference: "https://example.com/first-frame.png" },
    "unsupported_parameter",
    "input_reference",
  ),
  refusal(
    "input_reference as an object (image_url)",
    { prompt: PROMPT, input_reference: { image_url: "https://example.com/a.png" } },
    "unsupported_parameter",
    "input_reference",
    JSON_ONLY,
  ),
  refusal(
    "input_reference as a file part",
    { prompt: PROMPT, input_reference: { file: PNG } },
    "unsupported_parameter",
    "input_reference",
    FORM_ONLY,
  ),
  ...["quality", "n", "response_format", "remixed_from_video_id", "user", "fps", "num_frames", "stream"].map(
    (name) =>
      refusal(`${name} is an unknown parameter`, { prompt: PROMPT, [name]: "1" }, "unknown_parameter", name),
  ),
  refusal(
    "an unknown file part",
    { prompt: PROMPT, image: { file: PNG } },
    "unknown_parameter",
    "image",
    FORM_ONLY,
  ),
  refusal("prompt repeated", { prompt: [PROMPT, PROMPT] }, INVALID, "prompt", FORM_ONLY),
  refusal("prompt as a file part", { prompt: { file: Buffer.from(PROMPT) } }, INVALID, "prompt", FORM_ONLY),
  refusal("prompt as text and as a file", { prompt: [PROMPT, { file: PNG }] }, INVALID, "prompt", FORM_ONLY),
  refusal(
    "seconds as a file part",
    { prompt: PROMPT, seconds: { file: PNG } },
    INVALID,
    "seconds",
    FORM_ONLY,
  ),
  refusal("size repeated", { prompt: PROMPT, size: ["1280x704", "704x1280"] }, INVALID, "size", FORM_ONLY),
  refusal("seconds repeated", { prompt: PROMPT, seconds: ["5", "5"] }, INVALID, "seconds", FORM_ONLY),
  ...["z-image-turbo", "nope", "sora-2"].map((model) =>
    refusal(`model ${model}`, { prompt: PROMPT, model }, "model_not_found", "model"),
  ),
  refusal("model empty", { prompt: PROMPT, model: "" }, INVALID, "model"),
];

const REFUSED_CASES = REFUSED.flatMap((refusal) =>
  (refusal.via ?? (["json", "form"] as Via[])).map((via) => ({ ...refusal, via })),
);

describe('spec "Video": refused requests are 400 naming the field, and leave nothing behind', () => {
  it.each(REFUSED_CASES)("$rule ($via): 400 $code, param $param", async ({ fields, via, code, param }) => {
    const key = await s.t.newKey();
    const before = allJobs(s).length;
    const answer = await send(s, via, fields, key.key);
    expect(answer.status, answer.bytes.toString()).toBe(400);
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code, param });
    expect(typeof answer.body.error.message).toBe("string");
    expect(typeof answer.body.error.request_id).toBe("string");
    await expectNothingLeft(s, key, before);
  });

  it.each([
    { rule: "a body that is not valid JSON reads as empty", raw: "{not json" },
    { rule: "an empty body", raw: "" },
  ])("$rule: 400 missing_required_parameter, param prompt", async ({ raw }) => {
    const answer = await s.create(raw);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: "missing_required_parameter", param: "prompt" });
  });

  it("a JSON array is no request: 400", async () => {
    const answer = await s.create([{ prompt: PROMPT }]);
    expect(answer.status).toBe(400);
    expect(answer.body.error.type).toBe("invalid_request_error");
  });

  it("no key: 401 invalid_api_key, nothing sent", async () => {
    const before = allJobs(s).length;
    const answer = await readAnswer(
      await s.t.fetch("/v1/videos", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: PROMPT }),
      }),
    );
    expect(answer.status).toBe(401);
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_api_key" });
    expect(allJobs(s)).toHaveLength(before);
  });
});

// Each accepted value of spec "Video": the answer is the Video object at once, and the machine is asked for it.
const ACCEPTED: Array<{ rule: string; fields: Fields; size: string; seed?: number; via?: Via[] }> = [
  { rule: "prompt alone: the defaults", fields: { prompt: PROMPT }, size: "1280x704" },
  { rule: "prompt of exactly 2,000 characters", fields: { prompt: "b".repeat(2000) }, size: "1280x704" },
  { rule: "prompt of 2,000 emoji", fields: { prompt: EMOJI.repeat(2000) }, size: "1280x704" },
  { rule: "seconds 5", fields: { prompt: PROMPT, seconds: 5 }, size: "1280x704" },
  { rule: 'seconds "5"', fields: { prompt: PROMPT, seconds: "5" }, size: "1280x704" },
  { rule: "size 1280x704", fields: { prompt: PROMPT, size: "1280x704" }, size: "1280x704" },
  { rule: "size 704x1280", fields: { prompt: PROMPT, size: "704x1280" }, size: "704x1280" },
  { rule: "seed 0", fields: { prompt: PROMPT, seed: 0 }, size: "1280x704", seed: 0 },
  {
    rule: "seed 2147483647",
    fields: { prompt: PROMPT, seed: 2_147_483_647 },
    size: "1280x704",
    seed: 2_147_483_647,
  },
  { rule: "model wan-2.2-5b-fast", fields: { prompt: PROMPT, model: "wan-2.2-5b-fast" }, size: "1280x704" },
  {
    rule: "null fields count as absent",
    fields: { prompt: PROMPT, seconds: null, size: null, seed: null, model: null },
    size: "1280x704",
    via: ["json"],
  },
];

const ACCEPTED_CASES = ACCEPTED.flatMap((accepted) =>
  (accepted.via ?? (["json", "form"] as Via[])).map((via) => ({ ...accepted, via })),
);

describe('spec "Video": accepted requests answer the queued Video object at once', () => {
  let made = 0;
  it.each(ACCEPTED_CASES)("$rule ($via): 200, $size", async ({ fields, via, size, seed }) => {
    const key = await s.t.newKey();
    // Each case its own prompt (of the same length in characters), to find the machine's job among the others.
    const marker = `#${++made}:`;
    const prompt = marker + [...(fields.prompt as string)].slice(marker.length).join("");
    const answer = await send(s, via, { ...fields, prompt }, key.key);
    expect(answer.status, answer.bytes.toString()).toBe(200);
    expect(answer.body).toMatchObject({
      object: "video",
      status: "queued",
      progress: 0,
      created_at: Math.floor(s.clock.at / 1000),
      completed_at: null,
      expires_at: null,
      error: null,
      model: "wan-2.2-5b-fast",
      prompt,
      seconds: "5",
      size,
    });
    expect(answer.body.id).toMatch(/^video_[0-9a-f]{32}$/);
    const done = await s.waitFor(answer.body.id, ["completed", "failed"], { key: key.key });
    expect(done.status).toBe("completed");
    const jobs = allJobs(s).filter((job) => job.prompt === prompt);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ size, seed });
  });

  it("the model absent is wan-2.2-5b-fast, in the answer and in the list", async () => {
    const key = await s.t.newKey();
    const answer = await send(s, "form", { prompt: PROMPT }, key.key);
    expect(answer.body.model).toBe("wan-2.2-5b-fast");
    await s.waitFor(answer.body.id, ["completed", "failed"], { key: key.key });
    const list = await s.call("GET", "/v1/videos", { key: key.key });
    expect(list.body.data.map((video: { model: string }) => video.model)).toEqual(["wan-2.2-5b-fast"]);
  });
});

describe('spec "Video": content check of the prompt in each zone that may make the video', () => {
  afterEach(async () => {
    await s.tiModeration.setMode("normal");
    await s.zhModeration.setMode("normal");
  });

  it.each([
    "json",
    "form",
  ] as Via[])("a refused prompt (%s): 400 prompt_refused, param prompt, nothing left", async (via) => {
    const key = await s.t.newKey();
    const before = allJobs(s).length;
    const answer = await send(s, via, { prompt: "a forbidden scene" }, key.key);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      type: "invalid_request_error",
      code: "prompt_refused",
      param: "prompt",
    });
    expect(answer.body.error.message).toContain("violence");
    await expectNothingLeft(s, key, before);
  });

  it("a key of both zones: the prompt is checked once in each", async () => {
    const key = await s.t.newKey();
    s.tiModeration.clearRequests();
    s.zhModeration.clearRequests();
    const answer = await send(s, "json", { prompt: PROMPT }, key.key);
    expect(answer.status).toBe(200);
    expect(s.tiModeration.requestsTo("/v1/moderations")).toHaveLength(1);
    expect(s.zhModeration.requestsTo("/v1/moderations")).toHaveLength(1);
    await s.waitFor(answer.body.id, ["completed", "failed"], { key: key.key });
  });

  it("a key of one zone: only that zone's check is asked; the other zone's being down does not matter", async () => {
    const key = await s.t.newKey({ key: { zones: ["ch-ti"] } });
    s.tiModeration.clearRequests();
    await s.zhModeration.setMode("refuse");
    const prompt = `${PROMPT} in Ticino`;
    const answer = await send(s, "json", { prompt }, key.key);
    expect(answer.status).toBe(200);
    expect(s.tiModeration.requestsTo("/v1/moderations")).toHaveLength(1);
    const done = await s.waitFor(answer.body.id, ["completed", "failed"], { key: key.key });
    expect(done.status).toBe("completed");
    expect(s.tiVideos.jobs.filter((job) => job.prompt === prompt)).toHaveLength(1);
    expect(s.zhVideos.jobs.filter((job) => job.prompt === prompt)).toHaveLength(0);
  });

  // Last in this block: a refused connection opens the machine's circuit for a while (engines.circuit_cooldown_seconds).
  it.each([
    { rule: "answers errors", mode: "error500" as const },
    { rule: "is unreachable", mode: "refuse" as const },
  ])("the check of one zone $rule: 503 moderation_unavailable (server_error), nothing left", async ({
    mode,
  }) => {
    const key = await s.t.newKey();
    await s.zhModeration.setMode(mode);
    const before = allJobs(s).length;
    const answer = await send(s, "json", { prompt: PROMPT }, key.key);
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({ type: "server_error", code: "moderation_unavailable" });
    await expectNothingLeft(s, key, before);
  });
});

describe('spec "Endpoints": unsupported video paths and methods are 404 unknown_endpoint, never 405', () => {
  const ID = "video_0123456789abcdef0123456789abcdef";
  it.each([
    ["POST", "/v1/videos/edits"],
    ["POST", "/v1/videos/extensions"],
    ["POST", "/v1/videos/characters"],
    ["POST", `/v1/videos/${ID}/remix`],
    ["GET", "/v1/videos/characters/x"],
    ["POST", `/v1/videos/${ID}`],
    ["PUT", `/v1/videos/${ID}`],
    ["PATCH", `/v1/videos/${ID}`],
    ["PUT", "/v1/videos"],
    ["DELETE", "/v1/videos"],
    ["POST", `/v1/videos/${ID}/content`],
    ["DELETE", `/v1/videos/${ID}/content`],
  ])("%s %s: 404 unknown_endpoint", async (method, path) => {
    const before = allJobs(s).length;
    const body = method === "GET" ? {} : { body: JSON.stringify({ prompt: PROMPT }) };
    const answer = await readAnswer(
      await s.t.fetch(path, {
        method,
        headers: { authorization: `Bearer ${s.key}`, "content-type": "application/json" },
        ...body,
      }),
    );
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe("unknown_endpoint");
    expect(allJobs(s)).toHaveLength(before);
  });
});

describe('spec "Endpoints": video exists only where machines make it (503 no_engine_available)', () => {
  describe("an installation without a video machine", () => {
    let bare: VideoStack;
    beforeAll(async () => {
      bare = await startVideoStack({ withoutVideoMachines: true });
    });
    afterAll(() => bare.close());

    it.each([
      "json",
      "form",
    ] as Via[])("%s: 503 no_engine_available (server_error), nothing left", async (via) => {
      const answer = await send(bare, via, { prompt: PROMPT });
      expect(answer.status).toBe(503);
      expect(answer.body.error).toMatchObject({ type: "server_error", code: "no_engine_available" });
      await expectNothingLeft(bare, bare, 0);
      expect(bare.tiModeration.requests).toHaveLength(0);
    });
  });

  describe("a video machine in ch-ti only, content checks off (policy none in both zones)", () => {
    const only = new FakeVideosServer({ jobMs: 150 });
    let z: VideoStack;
    beforeAll(async () => {
      await only.start();
      z = await startVideoStack({
        withoutVideoMachines: true,
        contentChecks: { "ch-ti": "none", "ch-zh": "none" },
        extraMachines: [
          { name: "ti-only", zone: "ch-ti", protocol: "videos", url: only.url, models: ["wan-2.2-5b-fast"] },
        ],
      });
    });
    afterAll(async () => {
      await z.close();
      await only.close();
    });

    it("a key whose zones have no video machine: 503 no_engine_available, nothing left", async () => {
      const key = await z.t.newKey({ key: { zones: ["ch-zh"] } });
      const answer = await send(z, "json", { prompt: PROMPT }, key.key);
      expect(answer.status).toBe(503);
      expect(answer.body.error).toMatchObject({ type: "server_error", code: "no_engine_available" });
      expect(only.jobs).toEqual([]);
      await expectNothingLeft(z, key, 0);
    });

    it("with policy none nothing is asked: even a prompt the check would refuse is made", async () => {
      const answer = await send(z, "form", { prompt: "a forbidden scene" });
      expect(answer.status).toBe(200);
      const done = await z.waitFor(answer.body.id);
      expect(done.status).toBe("completed");
      expect(only.jobs.map((job) => job.prompt)).toEqual(["a forbidden scene"]);
      expect(z.tiModeration.requests).toHaveLength(0);
      expect(z.zhModeration.requests).toHaveLength(0);
    });
  });
});
