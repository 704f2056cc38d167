import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withCanary } from "../helpers/log-scan.ts";
import { toneWav } from "../media/wav-fixtures.ts";
import { type AudioStack, fixture, startAudioStack } from "./audio-stack.ts";

let s: AudioStack;
let client: OpenAI;

beforeAll(async () => {
  s = await startAudioStack();
  client = new OpenAI({ apiKey: s.key, baseURL: `${s.t.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());

describe("openai package: audio.transcriptions.create", () => {
  it("json: an object with text", async () => {
    const file = await toFile(toneWav({ dbfs: -20, seconds: 1 }), "speech.wav");
    const result = await client.audio.transcriptions.create({ file, model: "asr-1" });
    expect(result.text).toMatch(/^Fake transcript/);
  });

  it("text: the bare text", async () => {
    const file = await toFile(await fixture("tone-plain.mp3"), "speech.mp3");
    const result = await client.audio.transcriptions.create({
      file,
      model: "asr-1",
      response_format: "text",
    });
    expect(typeof result).toBe("string");
    expect(result).toMatch(/^Fake transcript/);
  });

  it("verbose_json with word timings: segments and words", async () => {
    const file = await toFile(await fixture("tone.flac"), "speech.flac");
    const result = await client.audio.transcriptions.create({
      file,
      model: "asr-1",
      response_format: "verbose_json",
      timestamp_granularities: ["word", "segment"],
      language: "it",
    });
    expect(result.language).toBe("it");
    expect(result.segments?.[0]?.id).toBe(1);
    expect(result.words?.[0]?.word.startsWith(" ")).toBe(true);
  });

  it("an unsupported file raises BadRequestError", async () => {
    const file = await toFile(Buffer.from("not audio, only text\n".repeat(10)), "speech.mp3");
    await expect(client.audio.transcriptions.create({ file, model: "asr-1" })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
  });
});

describe("openai package: audio.speech.create", () => {
  it("wav and mp3 files come back whole", async () => {
    const wav = await client.audio.speech.create({
      model: "tts-1",
      voice: "alloy",
      input: withCanary("Ciao a tutti"),
      response_format: "wav",
    });
    const wavBytes = Buffer.from(await wav.arrayBuffer());
    expect(wav.headers.get("content-type")).toBe("audio/wav");
    expect(wavBytes.subarray(0, 4).toString("latin1")).toBe("RIFF");
    const mp3 = await client.audio.speech.create({
      model: "tts-1",
      voice: "nova",
      input: "Ciao",
      response_format: "mp3",
    });
    expect(mp3.headers.get("content-type")).toBe("audio/mpeg");
    expect(
      Buffer.from(await mp3.arrayBuffer())
        .subarray(0, 3)
        .toString("latin1"),
    ).toBe("ID3");
  });

  it("an unknown voice raises BadRequestError", async () => {
    await expect(
      client.audio.speech.create({ model: "tts-1", voice: "nobody" as "alloy", input: "Ciao" }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });
});
