import exifr from "exifr";
import OpenAI from "openai";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AI_IMAGE_COMMENT, TRAINED_ALGORITHMIC_MEDIA } from "../../src/media/png-ai-mark.ts";
import { readPngText } from "../../src/media/png-chunks.ts";
import { captureLogs } from "../helpers/log-capture.ts";
import { CANARY, withCanary } from "../helpers/log-scan.ts";
import { type ImageStack, PICTURE_MICROS, startImageStack } from "./image-stack.ts";

let s: ImageStack;
let client: OpenAI;
const logs = captureLogs("trace");

beforeAll(async () => {
  s = await startImageStack({ logger: logs.logger });
  client = new OpenAI({ apiKey: s.key, baseURL: `${s.t.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());

/** The marks every delivered PNG carries, read back by a real reader (exifr) and by the chunk reader. */
async function expectMarkedPng(png: Buffer, size = { width: 1024, height: 1024 }) {
  const meta = await sharp(png).metadata();
  expect(meta).toMatchObject({ format: "png", ...size });
  const parsed = await exifr.parse(png, { xmp: true, ihdr: true, mergeOutput: false });
  expect(parsed.Iptc4xmpExt.DigitalSourceType).toBe(TRAINED_ALGORITHMIC_MEDIA);
  expect(parsed.ihdr.Comment).toBe(AI_IMAGE_COMMENT);
  // The engine's own text chunks (the fake's prompt hash and seed) are gone.
  expect(readPngText(png)["zona-fake"]).toBeUndefined();
}

describe("openai package: images.generate", () => {
  it("b64_json (the default): a base64 PNG marked as made by AI; X-Zona names the zone", async () => {
    const { data: result, response } = await client.images
      .generate({ model: "z-image-turbo", prompt: "a red bicycle against a blue wall" })
      .withResponse();
    expect(result.created).toBeGreaterThan(1_700_000_000);
    expect(result.data).toHaveLength(1);
    const b64 = result.data?.[0]?.b64_json;
    expect(typeof b64).toBe("string");
    expect(result.data?.[0]?.url).toBeUndefined();
    await expectMarkedPng(Buffer.from(b64 as string, "base64"));
    expect(["ch-ti", "ch-zh"]).toContain(response.headers.get("x-zona"));
  });

  it("url: a link that works without a key, PNG with the marks, cached privately until it expires", async () => {
    const result = await client.images.generate({
      prompt: "a small boat in fog",
      response_format: "url",
      size: "1536x1024",
    });
    const url = result.data?.[0]?.url as string;
    expect(url).toMatch(
      new RegExp(`^${s.t.url}/v1/images/file/[0-9a-f-]{36}\\.png\\?expires=\\d+&signature=[0-9a-f]{64}$`),
    );
    expect(result.data?.[0]?.b64_json).toBeUndefined();
    const expires = Number(new URL(url).searchParams.get("expires"));
    expect(expires).toBe(Math.floor(s.clock.at / 1000) + 24 * 3600);
    const file = await fetch(url);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("image/png");
    expect(file.headers.get("cache-control")).toBe("private, max-age=86400");
    await expectMarkedPng(Buffer.from(await file.arrayBuffer()), { width: 1536, height: 1024 });
  });

  it("n and seed: pictures one after the other, picture i with seed + i; the same request gives the same pictures", async () => {
    const ask = { prompt: "three pebbles on sand", n: 3, seed: 41 };
    const engines = () => [...s.tiImages.generations, ...s.zhImages.generations];
    const before = engines().length;
    const first = await client.images.generate(ask);
    const seeds = engines()
      .slice(before)
      .map((made) => made.seed);
    expect(seeds).toEqual([41, 42, 43]);
    const again = await client.images.generate(ask);
    const pictures = (result: typeof first) => (result.data ?? []).map((item) => item.b64_json);
    expect(pictures(first)).toHaveLength(3);
    expect(new Set(pictures(first)).size).toBe(3);
    expect(pictures(again)).toEqual(pictures(first));
  });

  it("without a seed, the pictures of one request still differ", async () => {
    const result = await client.images.generate({ prompt: "two clouds", n: 2 });
    const [a, b] = (result.data ?? []).map((item) => item.b64_json);
    expect(a).not.toBe(b);
  });

  it("usage: one record per request with the model, the pictures delivered, the cost and the time", async () => {
    const fresh = await s.t.newKey();
    const sdk = new OpenAI({ apiKey: fresh.key, baseURL: `${s.t.url}/v1`, maxRetries: 0 });
    await sdk.images.generate({ prompt: "a kite", n: 2 });
    const records = await s.usage(fresh.keyId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      endpoint: "images.generations",
      model: "z-image-turbo",
      units: { pictures: 2 },
      cost: (2 * PICTURE_MICROS) / 1_000_000,
      outcome: "ok",
    });
    expect(records[0].duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("a refused request raises BadRequestError", async () => {
    await expect(
      client.images.generate({ prompt: "x", size: "256x256" as "1024x1024" }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it("the prompt never reaches a log line, a usage record or the kept file's metadata", async () => {
    const fresh = await s.t.newKey();
    const sdk = new OpenAI({ apiKey: fresh.key, baseURL: `${s.t.url}/v1`, maxRetries: 0 });
    const prompt = withCanary("a quiet harbour");
    const result = await sdk.images.generate({ prompt, response_format: "url", n: 2 });
    const file = Buffer.from(await (await fetch(result.data?.[0]?.url as string)).arrayBuffer());
    expect(file.includes(CANARY)).toBe(false);
    expect(JSON.stringify(await s.usage(fresh.keyId))).not.toContain(CANARY);
    expect(logs.raw.length).toBeGreaterThan(0);
    expect(logs.raw.join("\n")).not.toContain(CANARY);
  });
});

describe("Images / placement: X-Zona names the zone that made the pictures", () => {
  it.each(["ch-ti", "ch-zh"])("a key restricted to %s is served there", async (zone) => {
    const restricted = await s.t.newKey({ key: { zones: [zone] } });
    for (let i = 0; i < 2; i++) {
      const answer = await s.generate({ prompt: "a pine tree" }, { key: restricted.key });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-zona")).toBe(zone);
    }
  });
});
