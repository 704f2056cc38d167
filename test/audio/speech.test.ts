import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PIPER_VOICES } from "../../src/engines/adapters/piper-adapter.ts";
import { detectAudioFormat } from "../../src/media/audio-format.ts";
import { readMp3Tags } from "../../src/media/mp3.ts";
import { parseWavHeader, readWavInfoChunk } from "../../src/media/wav.ts";
import { VALID_VOICE_NAMES } from "../../src/services/audio/voices.ts";
import { tempFolder } from "../media/wav-fixtures.ts";
import { type AudioStack, SPEECH_MICROS_PER_CHARACTER, startAudioStack } from "./audio-stack.ts";

let s: AudioStack;

beforeAll(async () => {
  s = await startAudioStack();
});
afterAll(() => s.close());
beforeEach(() => {
  s.piper.clearRequests();
  s.moderation.clearRequests();
});

/** The own voice Piper was asked for, by its Piper model name. */
function voiceAsked(): string {
  const model = s.piper.voicesAsked.at(-1);
  const own = Object.entries(PIPER_VOICES).find(([, piper]) => piper === model)?.[0];
  return own ?? `unknown (${model})`;
}

describe("Speech request: voices", () => {
  const table: Array<[string, Record<string, unknown>, string]> = [
    ["own name paola", { voice: "paola" }, "paola"],
    ["own name riccardo", { voice: "riccardo" }, "riccardo"],
    ["own name amy", { voice: "amy" }, "amy"],
    ["own name ryan", { voice: "ryan" }, "ryan"],
    ["own name thorsten", { voice: "thorsten" }, "thorsten"],
    ["own name siwis", { voice: "siwis" }, "siwis"],
    ["own name with another language keeps the voice", { voice: "thorsten", language: "it" }, "thorsten"],
    ["no voice: the default of it", {}, "paola"],
    ["no voice, language it", { language: "it" }, "paola"],
    ["no voice, language en", { language: "en" }, "amy"],
    ["no voice, language de", { language: "de" }, "thorsten"],
    ["no voice, language fr", { language: "fr" }, "siwis"],
    ["no voice, language rm: read in Italian", { language: "rm" }, "paola"],
    ["alloy with language en gives amy", { voice: "alloy", language: "en" }, "amy"],
    ["alloy with no language gives paola", { voice: "alloy" }, "paola"],
    ["ALLOY (any case) with en gives amy", { voice: "ALLOY", language: "en" }, "amy"],
    ["nova, shimmer, coral, sage are female: sage with en", { voice: "sage", language: "en" }, "amy"],
    ["coral with it", { voice: "coral", language: "it" }, "paola"],
    ["echo with en gives ryan", { voice: "echo", language: "en" }, "ryan"],
    ["onyx with it gives riccardo", { voice: "onyx", language: "it" }, "riccardo"],
    ["fable, ash, ballad, verse are male: Verse with it", { voice: "Verse", language: "it" }, "riccardo"],
    ["German has only a male voice: alloy with de", { voice: "alloy", language: "de" }, "thorsten"],
    ["German: echo with de", { voice: "echo", language: "de" }, "thorsten"],
    ["French has only a female voice: echo with fr", { voice: "echo", language: "fr" }, "siwis"],
    ["French: nova with fr", { voice: "nova", language: "fr" }, "siwis"],
    [
      "a language without voices is read by an Italian voice: echo with rm",
      { voice: "echo", language: "rm" },
      "riccardo",
    ],
    ["a language without voices: shimmer with es", { voice: "shimmer", language: "es" }, "paola"],
  ];
  it.each(table)("%s", async (_name, fields, expected) => {
    const answer = await s.speak({ input: "Buongiorno.", ...fields });
    expect(answer.status).toBe(200);
    expect(voiceAsked()).toBe(expected);
  });

  const unknown = ["Paola", "AMY", "bella", "nova2", ""];
  it.each(
    unknown.filter((name) => name !== ""),
  )("unknown voice %s (own names are case-sensitive): 400 listing the valid names, nothing read", async (voice) => {
    const answer = await s.speak({ input: "Buongiorno.", voice });
    expect(answer.status).toBe(400);
    expect(answer.body.error.type).toBe("invalid_request_error");
    expect(answer.body.error.param).toBe("voice");
    for (const name of VALID_VOICE_NAMES) expect(answer.body.error.message).toContain(name);
    expect(s.piper.requests).toHaveLength(0);
  });
});

describe("Speech request: fields", () => {
  const refused: Array<[string, Record<string, unknown>, string]> = [
    ["input missing", { voice: "paola" }, "input"],
    ["input empty", { input: "" }, "input"],
    ["input not a string", { input: 42 }, "input"],
    ["input over 5,000 characters", { input: "a".repeat(5001) }, "input"],
    ["response_format ogg", { input: "Ciao", response_format: "ogg" }, "response_format"],
    ["response_format opus", { input: "Ciao", response_format: "opus" }, "response_format"],
    ["language not a two-letter code", { input: "Ciao", language: "italiano" }, "language"],
    ["speed above 2.0", { input: "Ciao", speed: 2.5 }, "speed"],
    ["speed below 0.5", { input: "Ciao", speed: 0.25 }, "speed"],
    ["voice not a string", { input: "Ciao", voice: 3 }, "voice"],
  ];
  it.each(refused)("%s: 400 naming the field, nothing read", async (_name, body, param) => {
    const answer = await s.speak(body);
    expect(answer.status).toBe(400);
    expect(answer.body.error.type).toBe("invalid_request_error");
    expect(answer.body.error.param).toBe(param);
    expect(s.piper.requests).toHaveLength(0);
  });

  it("input of exactly 5,000 characters is read", async () => {
    const answer = await s.speak({ input: "a".repeat(5000) });
    expect(answer.status).toBe(200);
  });

  it("model and speed are accepted and ignored, unlisted fields ignored", async () => {
    const answer = await s.speak({
      input: "Ciao",
      model: "tts-1-hd",
      speed: 1.5,
      instructions: "cheerful",
      stream: true,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("audio/wav");
  });
});

describe("Speech response: whole file, matching Content-Type, marked as made by AI", () => {
  it("wav (default): audio/wav with a LIST/INFO chunk saying it was generated by AI", async () => {
    const answer = await s.speak({ input: "Buongiorno a tutti." });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("audio/wav");
    expect(answer.bytes.subarray(0, 4).toString("latin1")).toBe("RIFF");
    const info = readWavInfoChunk(answer.bytes);
    expect(Object.values(info).join(" ")).toMatch(/generated by AI/i);
    const header = parseWavHeader(answer.bytes);
    expect(header.ok && header.info.bitsPerSample).toBe(16);
  });

  it("mp3: audio/mpeg that is an MP3 by content, with ID3 tags saying it was generated by AI", async () => {
    const answer = await s.speak({ input: "Buongiorno a tutti.", response_format: "mp3" });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("audio/mpeg");
    const folder = await tempFolder();
    try {
      const path = await folder.write("speech.mp3", answer.bytes);
      const format = await detectAudioFormat(path);
      expect(format.accepted && format.container).toBe("mp3");
    } finally {
      await folder.cleanup();
    }
    const tags = readMp3Tags(answer.bytes);
    expect(JSON.stringify(tags)).toMatch(/generated by AI/i);
  });

  it("billing: per character of the input, one usage record", async () => {
    const input = "Grüezi mitenand, wie gaht's?";
    const answer = await s.speak({ input, language: "de" });
    expect(answer.status).toBe(200);
    const [record] = await s.usage();
    expect(record).toMatchObject({
      endpoint: "audio.speech",
      model: "tts-1",
      units: { characters: [...input].length },
      cost: ([...input].length * SPEECH_MICROS_PER_CHARACTER) / 1_000_000,
      zone: "ch-fallback",
      machine: "ch-piper",
      outcome: "ok",
    });
  });
});

describe("Speech: the content check, decided zone by zone", () => {
  // A failing machine opens its circuit breaker: each test gets an installation of its own.
  let f: AudioStack;
  afterEach(() => f.close());

  it("a refused text: 400 input_refused with param input, nothing read, nothing charged", async () => {
    f = await startAudioStack();
    const answer = await f.speak({ input: "Something forbidden to read." });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      type: "invalid_request_error",
      code: "input_refused",
      param: "input",
    });
    expect(f.moderation.requests).toHaveLength(1);
    expect(f.piper.requests).toHaveLength(0);
    for (const record of await f.usage()) expect(record).toMatchObject({ outcome: "refused", cost: 0 });
  });

  const unavailable: Array<[string, (stack: AudioStack) => Promise<void>]> = [
    ["errors (500)", (stack) => stack.moderation.setMode("error500")],
    ["does not answer (connection refused)", (stack) => stack.moderation.setMode("refuse")],
    ["hangs", (stack) => stack.moderation.setMode("hang")],
  ];
  it.each(
    unavailable,
  )("a check that %s: 503 moderation_unavailable (server_error), nothing read, nothing charged", async (_name, fail) => {
    f = await startAudioStack({ config: { engines: { first_byte_timeout_ms: 300 } } });
    await fail(f);
    const answer = await f.speak({ input: "Buongiorno." });
    expect(answer.status).toBe(503);
    expect(answer.body.error).toMatchObject({ type: "server_error", code: "moderation_unavailable" });
    expect(f.piper.requests).toHaveLength(0);
    for (const record of await f.usage()) expect(record).toMatchObject({ outcome: "refused", cost: 0 });
  });

  it("a zone without a moderation machine and not marked 'none': 503 moderation_unavailable", async () => {
    f = await startAudioStack({ withoutModeration: true });
    const answer = await f.speak({ input: "Buongiorno." });
    expect(answer.status).toBe(503);
    expect(answer.body.error.code).toBe("moderation_unavailable");
    expect(f.piper.requests).toHaveLength(0);
  });

  it("a zone whose content check is 'none' reads texts unchecked", async () => {
    f = await startAudioStack({ contentChecks: { "ch-fallback": "none" } });
    const answer = await f.speak({ input: "Something forbidden to read." });
    expect(answer.status).toBe(200);
    expect(f.moderation.requests).toHaveLength(0);
  });
});

describe("Speech: engine failures", () => {
  let f: AudioStack;
  afterEach(() => f.close());

  const failures: Array<[string, (stack: AudioStack) => Promise<void>]> = [
    ["errors (500)", (stack) => stack.piper.setMode("error500")],
    ["does not answer (connection refused)", (stack) => stack.piper.setMode("refuse")],
  ];
  it.each(failures)("a speech engine that %s: 502 bad_gateway, nothing charged", async (_name, fail) => {
    f = await startAudioStack();
    await fail(f);
    const answer = await f.speak({ input: "Buongiorno." });
    expect(answer.status).toBe(502);
    expect(answer.body.error.type).toBe("bad_gateway");
    for (const record of await f.usage()) expect(record).toMatchObject({ outcome: "failed", cost: 0 });
  });
});
