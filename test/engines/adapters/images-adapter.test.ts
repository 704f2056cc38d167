import sharp from "sharp";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createImagesAdapter } from "../../../src/engines/adapters/images-adapter.ts";
import { detectImageType, fromImagesAnswer } from "../../../src/engines/adapters/images-transforms.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { ImageEngine } from "../../../src/engines/modalities.ts";
import type { ImageCall } from "../../../src/engines/types.ts";
import {
  DEFAULT_IMAGES_SETTINGS,
  FakeImagesServer,
  fakeMachine,
  fakePictureMark,
  promptHash,
} from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeImagesServer();
let client: UpstreamClient;
let generate: ImageEngine["generateImage"];
const signal = () => new AbortController().signal;
const machine = (overrides = {}) =>
  fakeMachine("images", fake.url, {
    models: ["z-image-turbo"],
    upstream_names: { "z-image-turbo": "Tongyi-MAI/Z-Image-Turbo" },
    ...overrides,
  });
const call = (overrides: Partial<ImageCall> = {}): ImageCall => ({
  model: "z-image-turbo",
  prompt: "a red fox in the snow",
  size: "1024x1024",
  ...overrides,
});

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient();
  generate = createImagesAdapter(client, { imageTimeoutMs: 600 }).images.generateImage;
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal");
  fake.configure({ ...DEFAULT_IMAGES_SETTINGS, models: undefined });
  fake.clearRequests();
});

describe("images adapter", () => {
  const answers = [
    { answer: "b64_json", mime: "image/png" },
    { answer: "url", mime: "image/png" },
    { answer: "jpeg", mime: "image/jpeg" },
  ] as const;
  for (const { answer, mime } of answers) {
    it(`reads a ${answer} answer as ${mime} of the asked size`, async () => {
      fake.configure({ answer });
      const image = await generate(machine(), call({ size: "1024x1536", seed: 3 }), signal());
      expect(image.mime).toBe(mime);
      const meta = await sharp(image.data).metadata();
      expect([meta.width, meta.height]).toEqual([1024, 1536]);
      if (answer === "url") expect(fake.requests.map((r) => r.path)[1]).toMatch(/^\/files\/.+\.png$/);
    });
  }

  it("fetches a relative link under the machine's url", async () => {
    fake.configure({ answer: "url", relativeUrls: true });
    const image = await generate(machine({ url: `${fake.url}/v1` }), call(), signal());
    expect(image.mime).toBe("image/png");
    expect(fake.requests.map((r) => r.path)[0]).toBe("/v1/images/generations");
  });

  it("sends the upstream name, one b64_json picture, the size and the seed; ignores fields it does not know", async () => {
    fake.configure({ models: ["Tongyi-MAI/Z-Image-Turbo"] });
    const image = await generate(machine(), call({ seed: 1234 }), signal());
    expect(fake.lastRequest.body).toEqual({
      model: "Tongyi-MAI/Z-Image-Turbo",
      prompt: "a red fox in the snow",
      size: "1024x1024",
      n: 1,
      response_format: "b64_json",
      seed: 1234,
    });
    expect(fakePictureMark(image.data)).toEqual({
      prompt_hash: promptHash("a red fox in the snow"),
      seed: 1234,
    });
  });

  it("leaves the seed out when the request has none, and the same seed gives the same picture", async () => {
    await generate(machine(), call(), signal());
    expect(fake.lastRequest.body).not.toHaveProperty("seed");
    const a = await generate(machine(), call({ seed: 9 }), signal());
    const b = await generate(machine(), call({ seed: 9 }), signal());
    expect(a.data.equals(b.data)).toBe(true);
  });

  it("maps a 4xx and 5xx to status failures with the engine's message", async () => {
    fake.configure({ models: ["another-model"] });
    const missing = await failure(generate(machine(), call(), signal()));
    expect([missing.kind, missing.status]).toEqual(["status", 404]);
    expect(missing.message).toContain("Tongyi-MAI/Z-Image-Turbo");
    fake.configure({ models: undefined });
    await fake.setMode("error500");
    const down = await failure(generate(machine(), call(), signal()));
    expect([down.kind, down.status, down.retryable]).toEqual(["status", 500, true]);
    expect(down.message).toContain("fake failure");
  });

  const broken = [
    { answer: "garbage", what: "bytes that are no picture" },
    { answer: "empty", what: "an empty data list" },
  ] as const;
  for (const { answer, what } of broken) {
    it(`maps ${what} to a protocol failure`, async () => {
      fake.configure({ answer });
      expect((await failure(generate(machine(), call(), signal()))).kind).toBe("protocol");
    });
  }

  it("maps refuse to connect and hang to timeout (the image timeout)", async () => {
    await fake.setMode("hang");
    expect((await failure(generate(machine(), call(), signal()))).kind).toBe("timeout");
    await fake.setMode("refuse");
    expect((await failure(generate(machine(), call(), signal()))).kind).toBe("connect");
  });
});

describe("fromImagesAnswer", () => {
  const bad: Array<[string, unknown]> = [
    ["no data", { created: 1 }],
    ["an item with neither field", { data: [{ revised_prompt: "x" }] }],
    ["base64 with foreign characters", { data: [{ b64_json: "not base64!" }] }],
    ["a list", []],
  ];
  for (const [name, raw] of bad) {
    it(`fails with protocol on ${name}`, () => {
      expect(() => fromImagesAnswer(raw)).toThrowError(expect.objectContaining({ kind: "protocol" }));
    });
  }

  it("reads a data URL in `url` as bytes", () => {
    const answer = fromImagesAnswer({ data: [{ url: "data:image/png;base64,iVBORw0KGgo=" }] });
    expect(answer.kind).toBe("bytes");
  });

  it("detects PNG, JPEG and WebP by their signatures only", () => {
    expect(detectImageType(Buffer.from("89504e470d0a1a0a00", "hex"))).toBe("image/png");
    expect(detectImageType(Buffer.from("ffd8ffe000", "hex"))).toBe("image/jpeg");
    expect(detectImageType(Buffer.from("RIFF\0\0\0\0WEBPVP8 ", "latin1"))).toBe("image/webp");
    expect(detectImageType(Buffer.from("GIF89a", "latin1"))).toBeUndefined();
  });
});
