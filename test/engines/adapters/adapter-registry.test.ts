import { afterAll, describe, expect, it } from "vitest";
import { createAdapters } from "../../../src/engines/adapters/index.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import {
  type Modality,
  offered,
  PROTOCOL_MODALITIES,
  type Protocol,
  protocolOffers,
} from "../../../src/engines/modalities.ts";

describe("createAdapters: one adapter per protocol", () => {
  const client = new UpstreamClient();
  const adapterFor = createAdapters(client);
  afterAll(() => client.close());
  // The methods of a protocol's engines, all its modalities together (a key that is no method shows its type).
  const methods = (protocol: string) =>
    Object.values(adapterFor(protocol) ?? {})
      .flatMap((engine) => Object.entries(engine))
      .map(([name, value]) => (typeof value === "function" ? name : `${name}: ${typeof value}`))
      .sort();

  it("has adapters for openai (text, embeddings, rerank), ollama (no rerank) and tei (embeddings, rerank)", () => {
    expect(methods("openai")).toEqual([
      "chat",
      "chatStream",
      "complete",
      "completeStream",
      "embed",
      "rerank",
    ]);
    expect(methods("ollama")).toEqual(["chat", "chatStream", "complete", "completeStream", "embed"]);
    expect(methods("tei")).toEqual(["embed", "rerank"]);
  });

  it("has adapters for the audio protocols: whisper (transcribe), piper and espeak (speak), moderation", () => {
    expect(methods("whisper")).toEqual(["transcribe"]);
    expect(methods("piper")).toEqual(["speak"]);
    expect(methods("espeak")).toEqual(["speak"]);
    expect(methods("moderation")).toEqual(["moderate", "moderateImage"]);
  });

  it("has adapters for the image protocols: images and comfyui (generateImage)", () => {
    expect(methods("images")).toEqual(["generateImage"]);
    expect(methods("comfyui")).toEqual(["generateImage"]);
  });

  it("has the videos adapter (create, look at, download and delete a job)", () => {
    expect(methods("videos")).toEqual(["createVideo", "deleteVideo", "videoContent", "videoJob"]);
  });

  it("has none for protocols without an adapter", () => {
    expect(adapterFor("nonsense")).toBeUndefined();
  });

  it("builds a set over a client with other timeouts", async () => {
    const client = new UpstreamClient({ connectMs: 500, headersMs: 1_000, bodyMs: 1_000 });
    expect(client.timeouts).toEqual({ connectMs: 500, headersMs: 1_000, bodyMs: 1_000 });
    expect(createAdapters(client)("openai")).toBeDefined();
    await client.close();
  });

  const ALL: Modality[] = [
    "chat",
    "completion",
    "embeddings",
    "rerank",
    "transcription",
    "speech",
    "moderation",
    "imageModeration",
    "images",
    "videos",
  ];
  it.each([
    { protocol: "openai", offers: ["chat", "completion", "embeddings", "rerank"] },
    { protocol: "ollama", offers: ["chat", "completion", "embeddings"] },
    { protocol: "tei", offers: ["embeddings", "rerank"] },
    { protocol: "whisper", offers: ["transcription"] },
    { protocol: "piper", offers: ["speech"] },
    { protocol: "espeak", offers: ["speech"] },
    { protocol: "moderation", offers: ["moderation", "imageModeration"] },
    { protocol: "images", offers: ["images"] },
    { protocol: "comfyui", offers: ["images"] },
    { protocol: "videos", offers: ["videos"] },
  ])("the $protocol protocol offers exactly $offers (a machine is a candidate for these only)", ({
    protocol,
    offers,
  }) => {
    expect(ALL.filter((modality) => offered(adapterFor(protocol), modality) !== undefined)).toEqual(offers);
    // The registry's list of the protocol's work (which machines are candidates) says the same.
    expect(ALL.filter((modality) => protocolOffers(protocol as Protocol, modality))).toEqual(offers);
  });

  it("every protocol of the registry's list has its adapter, with an engine for each of its modalities and no other", () => {
    for (const [protocol, modalities] of Object.entries(PROTOCOL_MODALITIES)) {
      expect(Object.keys(adapterFor(protocol) ?? {}).sort(), protocol).toEqual([...modalities].sort());
    }
  });
});
