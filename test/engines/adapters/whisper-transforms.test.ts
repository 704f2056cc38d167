import { describe, expect, it } from "vitest";
import { languageCode } from "../../../src/engines/adapters/whisper-languages.ts";
import { fromWhisper } from "../../../src/engines/adapters/whisper-transforms.ts";
import { UpstreamError } from "../../../src/engines/types.ts";

function failure(run: () => unknown): UpstreamError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UpstreamError);
    return error as UpstreamError;
  }
  throw new Error("expected a failure");
}

// The shape whisper.cpp's server answers for verbose_json (examples/server/server.cpp).
const whisperCpp = {
  task: "transcribe",
  language: "english",
  duration: 3.5,
  text: " And so, my fellow Americans.",
  segments: [
    {
      id: 0,
      text: " And so, my fellow Americans.",
      start: 0,
      end: 3.5,
      tokens: [400, 370, 11, 452, 7177, 6280, 13],
      words: [
        { word: " And", start: 0, end: 0.4, t_dtw: -1, probability: 0.9 },
        { word: " so", start: 0.4, end: 0.8, t_dtw: -1, probability: 0.8 },
        { word: ",", start: 0.8, end: 0.8, t_dtw: -1, probability: 0.6 },
        { word: " my", start: 1, end: 1.3, t_dtw: -1, probability: 0.95 },
        { word: " fellow", start: 1.3, end: 1.9, t_dtw: -1, probability: 0.9 },
        { word: " Americ", start: 2, end: 2.9, t_dtw: -1, probability: 0.7 },
        { word: "ans", start: 2.9, end: 3.2, t_dtw: -1, probability: 0.5 },
        { word: ".", start: 3.2, end: 3.5, t_dtw: -1, probability: 0.9 },
      ],
      temperature: 0,
      avg_logprob: -0.25,
    },
  ],
};

describe("fromWhisper", () => {
  it("reads whisper.cpp: language name to code, null no_speech_prob, tokens joined into words", () => {
    const result = fromWhisper(whisperCpp, true);
    expect(result.text).toBe("And so, my fellow Americans.");
    expect(result.language).toBe("en");
    expect(result.duration).toBe(3.5);
    expect(result.segments).toEqual([
      { start: 0, end: 3.5, text: " And so, my fellow Americans.", no_speech_prob: null, avg_logprob: -0.25 },
    ]);
    expect(result.words?.map(({ word, start, end }) => [word, start, end])).toEqual([
      [" And", 0, 0.4],
      [" so,", 0.4, 0.8],
      [" my", 1, 1.3],
      [" fellow", 1.3, 1.9],
      [" Americans.", 2, 3.5],
    ]);
    expect(result.words?.[1]?.probability).toBeCloseTo(0.7);
    expect(result.words?.[4]?.probability).toBeCloseTo(0.7);
  });

  it("leaves words out when they were not asked, and gives an empty list when asked but absent", () => {
    expect(fromWhisper(whisperCpp, false).words).toBeUndefined();
    expect(fromWhisper({ text: "ciao", segments: [] }, true).words).toEqual([]);
  });

  it("reads OpenAI's words: no leading space and no probability", () => {
    const result = fromWhisper(
      {
        text: "Hello world",
        language: "english",
        duration: 1,
        segments: [
          { id: 0, start: 0, end: 1, text: " Hello world", avg_logprob: -0.1, no_speech_prob: 0.02 },
        ],
        words: [
          { word: "Hello", start: 0, end: 0.5 },
          { word: "world", start: 0.5, end: 1 },
        ],
      },
      true,
    );
    expect(result.words).toEqual([
      { word: " Hello", start: 0, end: 0.5, probability: 1 },
      { word: " world", start: 0.5, end: 1, probability: 1 },
    ]);
    expect(result.segments[0]).toEqual({
      start: 0,
      end: 1,
      text: " Hello world",
      no_speech_prob: 0.02,
      avg_logprob: -0.1,
    });
  });

  it("keeps nested words as they are when none or all start with a space", () => {
    const nested = (words: string[]) =>
      fromWhisper(
        {
          text: "x",
          segments: [
            { start: 0, end: 2, text: "x", words: words.map((word, i) => ({ word, start: i, end: i + 1 })) },
          ],
        },
        true,
      ).words?.map((w) => w.word);
    expect(nested(["Hello", "world"])).toEqual([" Hello", " world"]);
    expect(nested([" Hello", " world"])).toEqual([" Hello", " world"]);
  });

  it("reads times as t0/t1 in centiseconds or offsets in milliseconds", () => {
    const result = fromWhisper(
      {
        text: "a b",
        segments: [
          { t0: 0, t1: 150, text: " a" },
          { offsets: { from: 1500, to: 2750 }, text: " b" },
        ],
      },
      false,
    );
    expect(result.segments.map(({ start, end }) => [start, end])).toEqual([
      [0, 1.5],
      [1.5, 2.75],
    ]);
    expect([result.language, result.duration]).toEqual([null, null]);
  });

  it("joins the segments when the text is missing", () => {
    expect(fromWhisper({ segments: [{ start: 0, end: 1, text: " Ciao." }] }, false).text).toBe("Ciao.");
  });

  const malformed: Array<[string, unknown]> = [
    ["a bare string", "Hello"],
    ["a list", [{ text: "x" }]],
    ["no text and no segments", { language: "en" }],
    ["segments that are not a list", { text: "x", segments: { start: 0 } }],
    ["a segment that is not an object", { text: "x", segments: ["x"] }],
    ["a segment without times", { text: "x", segments: [{ text: "x" }] }],
  ];
  for (const [name, raw] of malformed) {
    it(`fails with protocol on ${name}`, () => {
      expect(failure(() => fromWhisper(raw, false)).kind).toBe("protocol");
    });
  }

  it("fails with status 500 on whisper.cpp's error inside a 200 answer", () => {
    const error = failure(() => fromWhisper({ error: "failed to process audio" }, false));
    expect([error.kind, error.status]).toEqual(["status", 500]);
    expect(error.message).toContain("failed to process audio");
  });
});

describe("languageCode", () => {
  const cases: Array<[string, string | null]> = [
    ["italian", "it"],
    ["English", "en"],
    ["german", "de"],
    ["french", "fr"],
    ["haitian creole", "ht"],
    ["hawaiian", "haw"],
    ["it", "it"],
    ["EN", "en"],
    ["en-US", "en"],
    ["yue", "yue"],
    ["klingonese", null],
    ["", null],
  ];
  for (const [name, code] of cases) {
    it(`reads "${name}" as ${code}`, () => expect(languageCode(name)).toBe(code));
  }
});
