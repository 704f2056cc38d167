import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChatCall, ContentPart } from "../../src/engines/types.ts";
import { dataUri, MAGIC, startTextApp, type TextApp } from "./text-app.ts";

const MB = 1024 * 1024;
const withImage = (model: string, url: string) => ({
  model,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url, detail: "low" } },
      ],
    },
  ],
});

describe("POST /v1/chat/completions images (spec: image_url parts, PNG/JPEG/WebP/GIF, 8 MB, models flagged for images)", () => {
  let a: TextApp;
  beforeAll(async () => {
    a = await startTextApp();
  });
  afterAll(() => a.close());
  beforeEach(() => a.fake.reset());

  const sentUrl = () => {
    const parts = (a.fake.last().input as ChatCall).messages[0]?.content as ContentPart[];
    const image = parts[1];
    return image?.type === "image_url" ? image.image_url.url : undefined;
  };

  const accepted: Array<[string, string, string]> = [
    ["accepted: a PNG data URI", dataUri(MAGIC.png, "image/png"), "image/png"],
    ["accepted: a JPEG data URI", dataUri(MAGIC.jpeg, "image/jpeg"), "image/jpeg"],
    ["accepted: a WebP data URI", dataUri(MAGIC.webp, "image/webp"), "image/webp"],
    ["accepted: a GIF data URI", dataUri(MAGIC.gif, "image/gif"), "image/gif"],
    [
      "type by content, not the declared mime: PNG bytes declared as JPEG pass as PNG",
      dataUri(MAGIC.png, "image/jpeg"),
      "image/png",
    ],
    [
      "type by content: PNG bytes declared as application/octet-stream pass as PNG",
      dataUri(MAGIC.png, "application/octet-stream"),
      "image/png",
    ],
    ["accepted: an image of exactly 8 MB", dataUri(MAGIC.png, "image/png", 8 * MB), "image/png"],
  ];
  for (const [title, url, type] of accepted) {
    it(title, async () => {
      const answer = await a.post("/v1/chat/completions", withImage("vision-27b", url));
      expect(answer.status, answer.text.slice(0, 300)).toBe(200);
      const sent = sentUrl();
      expect(sent?.startsWith(`data:${type};base64,`)).toBe(true);
      expect(sent?.split(",")[1]).toBe(url.split(",")[1]);
    });
  }

  it("an http(s) address is passed on unfetched", async () => {
    const url = "https://images.example.com/cat.png?size=large";
    const answer = await a.post("/v1/chat/completions", withImage("vision-27b", url));
    expect(answer.status).toBe(200);
    expect(sentUrl()).toBe(url);
  });

  const refused: Array<[string, string]> = [
    ["unacceptable image: bytes that are no image, declared as PNG", dataUri("just some text", "image/png")],
    ["unacceptable image: a BMP", dataUri(MAGIC.bmp, "image/bmp")],
    ["unacceptable image: over 8 MB", dataUri(MAGIC.png, "image/png", 8 * MB + 1)],
    ["unacceptable image: a data URI that is not base64", "data:image/png,%89PNG"],
    ["unacceptable image: broken base64", "data:image/png;base64,iVBO!!!!"],
    ["unacceptable image: an ftp address", "ftp://example.com/cat.png"],
    ["unacceptable image: a file path", "file:///etc/passwd"],
    ["unacceptable image: a loopback address", "http://127.0.0.1:8080/cat.png"],
    ["unacceptable image: a private network address", "http://10.1.2.3/cat.png"],
    ["unacceptable image: localhost", "http://localhost/cat.png"],
    ["unacceptable image: an IPv6 loopback", "http://[::1]/cat.png"],
    ["unacceptable image: not a URL", "cat.png"],
  ];
  for (const [title, url] of refused) {
    it(`400 ${title}`, async () => {
      const answer = await a.post("/v1/chat/completions", withImage("vision-27b", url));
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "invalid_image",
        param: "messages.0.content.1.image_url.url",
      });
      expect(a.fake.received).toEqual([]);
    });
  }

  for (const model of ["gemma3.8-27b", "local-8b"]) {
    it(`400 naming the param: an image part on a model not flagged for images (${model})`, async () => {
      const answer = await a.post("/v1/chat/completions", withImage(model, dataUri(MAGIC.png)));
      expect(answer.status).toBe(400);
      expect(answer.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "image_not_supported",
        param: "messages.0.content.1.image_url.url",
      });
    });
  }

  it("an unknown model with an image is 404 (the model is checked before its images)", async () => {
    const answer = await a.post("/v1/chat/completions", withImage("nope", "ftp://x"));
    expect(answer.status).toBe(404);
  });

  it("422: an image part without a url", async () => {
    const answer = await a.post("/v1/chat/completions", {
      model: "vision-27b",
      messages: [{ role: "user", content: [{ type: "image_url", image_url: {} }] }],
    });
    expect(answer.status).toBe(422);
    expect(answer.body.error.param).toBe("messages.0.content.0.image_url.url");
  });

  it("422: an image detail other than auto, low, high", async () => {
    const answer = await a.post("/v1/chat/completions", {
      model: "vision-27b",
      messages: [
        {
          role: "user",
          content: [{ type: "image_url", image_url: { url: dataUri(MAGIC.png), detail: "max" } }],
        },
      ],
    });
    expect(answer.status).toBe(422);
    expect(answer.body.error.param).toBe("messages.0.content.0.image_url.detail");
  });
});
