import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createModerationAdapter } from "../../../src/engines/adapters/moderation-adapter.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { ImageModerationEngine } from "../../../src/engines/modalities.ts";
import {
  DEFAULT_MODERATION_SETTINGS,
  FakeModerationServer,
  fakeMachine,
  fakePicture,
  fakePictureMark,
} from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeModerationServer();
let client: UpstreamClient;
let moderateImage: ImageModerationEngine["moderateImage"];
const signal = () => new AbortController().signal;
const machine = (models: string[] = []) => fakeMachine("moderation", fake.url, { models });
const picture = async (seed: number) =>
  (await fakePicture({ prompt: "a castle", seed, width: 64, height: 64 })).data;
const refuseSeed13 = (png: Buffer) => fakePictureMark(png)?.seed === 13;

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300 });
  moderateImage = createModerationAdapter(client).imageModeration.moderateImage;
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal");
  fake.configure({ ...DEFAULT_MODERATION_SETTINGS, models: undefined });
  fake.clearRequests();
});

describe("image moderation", () => {
  const cases = [
    { seed: 12, flagged: false, categories: [] },
    { seed: 13, flagged: true, categories: ["sexual"] },
  ];
  for (const { seed, flagged, categories } of cases) {
    it(`${flagged ? "flags" : "passes"} the picture the server ${flagged ? "refuses" : "accepts"}`, async () => {
      fake.configure({ flagImage: refuseSeed13, flagCategories: ["sexual"] });
      const png = await picture(seed);
      expect(await moderateImage(machine(), png, signal())).toEqual({ flagged, categories });
    });
  }

  it("sends the picture as OpenAI's multi-modal input, with the machine's model name", async () => {
    fake.configure({ models: ["omni-moderation-latest"] });
    const png = await picture(1);
    const m = fakeMachine("moderation", fake.url, {
      models: ["moderation"],
      upstream_names: { moderation: "omni-moderation-latest" },
    });
    await moderateImage(m, png, signal());
    expect(fake.lastRequest.path).toBe("/v1/moderations");
    expect(fake.lastRequest.body).toEqual({
      model: "omni-moderation-latest",
      input: [{ type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } }],
    });
  });

  it("keeps flagging texts as before", async () => {
    fake.configure({ flagImage: () => true });
    expect(
      (await createModerationAdapter(client).moderation.moderate(machine(), "plain words", signal())).flagged,
    ).toBe(false);
  });

  it("maps a server that is down, failing or silent to connect, status and timeout", async () => {
    const png = await picture(2);
    await fake.setMode("refuse");
    expect((await failure(moderateImage(machine(), png, signal()))).kind).toBe("connect");
    await fake.setMode("error500");
    expect((await failure(moderateImage(machine(), png, signal()))).kind).toBe("status");
    await fake.setMode("hang");
    expect((await failure(moderateImage(machine(), png, signal()))).kind).toBe("timeout");
  });
});
