import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ImageStack, startImageStack } from "./image-stack.ts";

let s: ImageStack;
beforeAll(async () => {
  s = await startImageStack();
});
afterAll(() => s.close());

const PROMPT = "a lighthouse on a rocky shore at dusk";

// Each spec rule of "Images: POST /v1/images/generations" as one case: the body and the 400 it gets.
const REFUSED: Array<{ rule: string; body: unknown; code: string; param: string | null }> = [
  { rule: "prompt missing", body: {}, code: "missing_required_parameter", param: "prompt" },
  { rule: "prompt empty", body: { prompt: "" }, code: "missing_required_parameter", param: "prompt" },
  {
    rule: "prompt only blanks",
    body: { prompt: "   " },
    code: "missing_required_parameter",
    param: "prompt",
  },
  { rule: "prompt null", body: { prompt: null }, code: "missing_required_parameter", param: "prompt" },
  {
    rule: "prompt over 4,000 characters",
    body: { prompt: "a".repeat(4001) },
    code: "string_above_max_length",
    param: "prompt",
  },
  { rule: "prompt not a string", body: { prompt: 42 }, code: "invalid_value", param: "prompt" },
  {
    rule: "model of another name",
    body: { prompt: PROMPT, model: "dall-e-3" },
    code: "model_not_found",
    param: "model",
  },
  {
    rule: "model that is not an image model",
    body: { prompt: PROMPT, model: "chat-1" },
    code: "model_not_found",
    param: "model",
  },
  { rule: "model not a string", body: { prompt: PROMPT, model: 3 }, code: "invalid_value", param: "model" },
  {
    rule: "size not offered",
    body: { prompt: PROMPT, size: "512x512" },
    code: "invalid_value",
    param: "size",
  },
  {
    rule: "size near an offered one is not rounded",
    body: { prompt: PROMPT, size: "1024x1023" },
    code: "invalid_value",
    param: "size",
  },
  { rule: "size auto", body: { prompt: PROMPT, size: "auto" }, code: "invalid_value", param: "size" },
  { rule: "n 0", body: { prompt: PROMPT, n: 0 }, code: "invalid_value", param: "n" },
  { rule: "n 5", body: { prompt: PROMPT, n: 5 }, code: "invalid_value", param: "n" },
  { rule: "n not whole", body: { prompt: PROMPT, n: 1.5 }, code: "invalid_value", param: "n" },
  { rule: "n as a string", body: { prompt: PROMPT, n: "2" }, code: "invalid_value", param: "n" },
  {
    rule: "response_format other",
    body: { prompt: PROMPT, response_format: "png" },
    code: "invalid_value",
    param: "response_format",
  },
  { rule: "seed negative", body: { prompt: PROMPT, seed: -1 }, code: "invalid_value", param: "seed" },
  {
    rule: "seed above 2147483647",
    body: { prompt: PROMPT, seed: 2_147_483_648 },
    code: "invalid_value",
    param: "seed",
  },
  { rule: "seed not whole", body: { prompt: PROMPT, seed: 1.25 }, code: "invalid_value", param: "seed" },
  { rule: "seed as a string", body: { prompt: PROMPT, seed: "7" }, code: "invalid_value", param: "seed" },
  ...["quality", "style", "background", "output_format", "user", "moderation", "output_compression"].map(
    (name) => ({
      rule: `${name} is an unknown parameter`,
      body: { prompt: PROMPT, [name]: "x" },
      code: "unknown_parameter",
      param: name,
    }),
  ),
  {
    rule: "an unknown parameter is named even beside a missing prompt",
    body: { stream: true },
    code: "unknown_parameter",
    param: "stream",
  },
];

describe("Images / request fields: every rule of the spec's table is a 400 naming the field", () => {
  it.each(REFUSED)("$rule: 400 $code, param $param", async ({ body, code, param }) => {
    const before = s.tiImages.generations.length + s.zhImages.generations.length;
    const answer = await s.generate(body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", code, param });
    expect(typeof answer.body.error.request_id).toBe("string");
    // Nothing was made.
    expect(s.tiImages.generations.length + s.zhImages.generations.length).toBe(before);
  });

  it("the message of a refused size lists the sizes", async () => {
    const answer = await s.generate({ prompt: PROMPT, size: "1792x1024" });
    expect(answer.body.error.message).toContain("1024x1024, 1024x1536, 1536x1024");
  });

  it.each([
    { rule: "a body that is not valid JSON reads as empty: missing prompt", raw: "{not json" },
    { rule: "an empty body: missing prompt", raw: "" },
  ])("$rule", async ({ raw }) => {
    const answer = await s.generate(raw);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: "missing_required_parameter", param: "prompt" });
  });
});

describe("Images / accepted values", () => {
  it.each([
    { rule: "prompt of exactly 4,000 characters", body: { prompt: "b".repeat(4000) }, size: "1024x1024" },
    { rule: "size 1024x1536", body: { prompt: PROMPT, size: "1024x1536" }, size: "1024x1536" },
    { rule: "size 1536x1024", body: { prompt: PROMPT, size: "1536x1024" }, size: "1536x1024" },
    { rule: "model z-image-turbo", body: { prompt: PROMPT, model: "z-image-turbo" }, size: "1024x1024" },
    {
      rule: "null fields count as absent",
      body: { prompt: PROMPT, n: null, seed: null, size: null },
      size: "1024x1024",
    },
    { rule: "seed 0", body: { prompt: PROMPT, seed: 0 }, size: "1024x1024" },
    { rule: "seed 2147483647", body: { prompt: PROMPT, seed: 2_147_483_647 }, size: "1024x1024" },
  ])("$rule: 200 with one picture of $size", async ({ body, size }) => {
    const answer = await s.generate(body);
    expect(answer.status).toBe(200);
    expect(answer.body.data).toHaveLength(1);
    const made = [...s.tiImages.generations, ...s.zhImages.generations].at(-1);
    expect(made?.size).toBe(size);
  });
});

describe("Images / paths that do not exist", () => {
  it.each([
    ["POST", "/v1/images/edits"],
    ["POST", "/v1/images/variations"],
    ["GET", "/v1/images/generations"],
    ["POST", "/v1/images/file/x.png"],
  ])("%s %s: 404 unknown_endpoint", async (method, path) => {
    const answer = await s.t.fetch(path, { method, headers: { authorization: `Bearer ${s.key}` } });
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe("unknown_endpoint");
  });
});
