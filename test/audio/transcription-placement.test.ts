import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { withCanary } from "../helpers/log-scan.ts";
import { noiseWav, quietThenLoudWav, silenceWav, toneWav } from "../media/wav-fixtures.ts";
import { type AudioStack, fixture, startAudioStack, TRANSCRIPTION_MICROS_PER_SECOND } from "./audio-stack.ts";

let s: AudioStack;
const TONE = toneWav({ dbfs: -20, seconds: 2 });

beforeAll(async () => {
  s = await startAudioStack();
});
afterAll(() => s.close());
beforeEach(async () => {
  for (const fake of [s.zoneWhisper, s.fallbackWhisper]) {
    fake.clearRequests();
    fake.configure({ transcript: undefined, refuseStatus: undefined });
    await fake.setMode("normal");
  }
});

/** Which engine got the call: "zone", "fallback", or "none". */
function engineUsed(): string {
  const zone = s.zoneWhisper.requestsTo("/v1/audio/transcriptions").length;
  const fallback = s.fallbackWhisper.requestsTo("/v1/audio/transcriptions").length;
  if (zone > 0 && fallback > 0) return "zone, then fallback";
  return zone > 0 ? "zone" : fallback > 0 ? "fallback" : "none";
}

describe("Transcription placement rules", () => {
  const cases: Array<[string, () => Promise<Buffer>, Record<string, string | string[]>, string]> = [
    ["rule 1: asr-1 runs on the zone machine", async () => TONE, {}, "zone"],
    ["rule 2: asr-1-hd goes to the fallback server", async () => TONE, { model: "asr-1-hd" }, "fallback"],
    [
      "rule 2: word timings go to the fallback server",
      async () => TONE,
      { response_format: "verbose_json", "timestamp_granularities[]": ["word", "segment"] },
      "fallback",
    ],
    [
      "rule 2: segment timings alone stay in the zone",
      async () => TONE,
      { response_format: "verbose_json", "timestamp_granularities[]": "segment" },
      "zone",
    ],
    [
      "rule 2: any prompt goes to the fallback server",
      async () => TONE,
      { prompt: withCanary("Lugano, Ceresio") },
      "fallback",
    ],
    [
      "rule 2: audio longer than 10 minutes goes to the fallback server",
      async () => toneWav({ dbfs: -20, seconds: 601, sampleRate: 8000 }),
      {},
      "fallback",
    ],
    ["rule 2: a 3GPP file goes to the fallback server", () => fixture("tone.3gp"), {}, "fallback"],
    ["rule 2: an AMR file goes to the fallback server", () => fixture("tone.amr"), {}, "fallback"],
    ["rule 1: an MP3 stays in the zone", () => fixture("tone-plain.mp3"), {}, "zone"],
  ];
  it.each(cases)("%s", async (_name, file, fields, expected) => {
    const answer = await s.transcribe(await file(), fields, "audio");
    expect(answer.status).toBe(200);
    expect(engineUsed()).toBe(expected);
    // X-Zona only when a machine of the key's zones transcribed.
    expect(answer.headers.get("x-zona")).toBe(expected === "zone" ? "ch-ti" : null);
  });

  it("rule 1: 10 minutes exactly stays in the zone", async () => {
    const answer = await s.transcribe(toneWav({ dbfs: -20, seconds: 600, sampleRate: 8000 }), {}, "a.wav");
    expect(answer.status).toBe(200);
    expect(engineUsed()).toBe("zone");
  });

  it("billing: per second of audio, rounded up, in one usage record", async () => {
    const answer = await s.transcribe(toneWav({ dbfs: -20, seconds: 2.5 }), {}, "a.wav");
    expect(answer.status).toBe(200);
    const [record] = await s.usage();
    expect(record).toMatchObject({
      endpoint: "audio.transcriptions",
      units: { seconds: 3 },
      cost: (3 * TRANSCRIPTION_MICROS_PER_SECOND) / 1_000_000,
      zone: "ch-ti",
      machine: "ti-whisper",
      outcome: "ok",
    });
  });
});

describe("Transcription placement rule 3: failover to the fallback server", () => {
  // A failing machine opens its circuit breaker: these tests get an installation of their own.
  let f: AudioStack;
  beforeEach(async () => {
    f = await startAudioStack();
  });
  afterEach(() => f.close());

  const failures: Array<[string, () => Promise<void>]> = [
    ["does not answer (connection refused)", () => f.zoneWhisper.setMode("refuse")],
    ["errors (500)", () => f.zoneWhisper.setMode("error500")],
    [
      "refuses the file (4xx)",
      async () => {
        f.zoneWhisper.configure({ refuseStatus: 415 });
      },
    ],
  ];
  it.each(
    failures,
  )("rule 3: a zone machine that %s hands over to the fallback server, charged once", async (_name, fail) => {
    await fail();
    const before = (await f.usage()).length;
    const answer = await f.transcribe(TONE, {}, "a.wav");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-zona")).toBeNull();
    expect(f.fallbackWhisper.requestsTo("/v1/audio/transcriptions")).toHaveLength(1);
    const records = await f.usage();
    expect(records.length - before).toBe(1);
    expect(records[0]).toMatchObject({
      endpoint: "audio.transcriptions",
      model: "asr-1",
      zone: "ch-fallback",
    });
  });

  it("rule 3: 502 bad_gateway only when the fallback server fails too; nothing charged", async () => {
    await f.zoneWhisper.setMode("error500");
    await f.fallbackWhisper.setMode("error500");
    const answer = await f.transcribe(TONE, {}, "a.wav");
    expect(answer.status).toBe(502);
    expect(answer.body.error.type).toBe("bad_gateway");
    const records = await f.usage();
    expect(records[0]).toMatchObject({ outcome: "failed", cost: 0 });
  });
});

describe("Transcription placement: machine health and installations without zones", () => {
  it("a zone machine that refuses files (4xx) is not taken out: the next good file runs on it again", async () => {
    const f = await startAudioStack();
    try {
      f.zoneWhisper.configure({ refuseStatus: 415 });
      for (let i = 0; i < 4; i++) expect((await f.transcribe(TONE, {}, "a.wav")).status).toBe(200);
      f.zoneWhisper.configure({ refuseStatus: undefined });
      const answer = await f.transcribe(TONE, {}, "a.wav");
      expect(answer.headers.get("x-zona")).toBe("ch-ti");
    } finally {
      await f.close();
    }
  });

  it("without installation zones the fallback server is never taken for a zone machine (no X-Zona, answers pass as they come)", async () => {
    const f = await startAudioStack({ zoneless: true });
    try {
      f.fallbackWhisper.setTranscript({
        text: "Grazie.",
        segments: [{ start: 0, end: 1, text: "Grazie.", no_speech_prob: 0.9, avg_logprob: -2 }],
      });
      const answer = await f.transcribe(TONE, {}, "a.wav");
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-zona")).toBeNull();
      expect(answer.body.text).toBe("Grazie.");
    } finally {
      await f.close();
    }
  });
});

describe("Silent audio rules", () => {
  const silent: Array<[string, Buffer]> = [
    ["digital silence", silenceWav(3)],
    ["quiet noise near -59 dBFS (rule 5)", noiseWav({ dbfs: -59, seconds: 2 })],
  ];
  it.each(silent)("%s: 200 with empty text, no model run, nothing charged (rule 4)", async (_name, wav) => {
    const before = (await s.usage()).length;
    const json = await s.transcribe(wav, {}, "a.wav");
    expect(json.status).toBe(200);
    expect(json.body).toEqual({ text: "" });
    const verbose = await s.transcribe(wav, { response_format: "verbose_json" }, "a.wav");
    expect(verbose.body).toMatchObject({ text: "", duration: 0, language: "it", segments: [] });
    const withLanguage = await s.transcribe(
      wav,
      { response_format: "verbose_json", language: "fr" },
      "a.wav",
    );
    expect(withLanguage.body.language).toBe("fr");
    const text = await s.transcribe(wav, { response_format: "text" }, "a.wav");
    expect(text.status).toBe(200);
    expect(text.text).toBe("");
    expect(text.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(engineUsed()).toBe("none");
    expect((await s.usage()).length).toBe(before);
  });

  const toModel: Array<[string, Buffer]> = [
    ["a tone at -40 dBFS (rule 2)", toneWav({ dbfs: -40, seconds: 1 })],
    ["louder noise near -48 dBFS (rule 5)", noiseWav({ dbfs: -48, seconds: 2 })],
    ["quiet for more than 2,000,000 bytes, then sound (rule 3)", quietThenLoudWav()],
    ["24-bit silence (rule 1: only 16-bit PCM is measured)", silenceWav(1, { bits: 24 })],
    ["8-bit silence (rule 1)", silenceWav(1, { bits: 8 })],
  ];
  it.each(toModel)("%s goes to the model", async (_name, wav) => {
    const answer = await s.transcribe(wav, {}, "a.wav");
    expect(answer.status).toBe(200);
    expect(engineUsed()).toBe("zone");
  });

  it("compressed formats always go to the model (rule 1)", async () => {
    const answer = await s.transcribe(await fixture("tone.flac"), {}, "a.flac");
    expect(answer.status).toBe(200);
    expect(engineUsed()).toBe("zone");
  });
});

describe("Silent audio rule 7: the hallucination filter", () => {
  const low = { no_speech_prob: 0.8, avg_logprob: -1.2 };
  const high = { no_speech_prob: 0.01, avg_logprob: -0.1 };
  const phrase = (text: string, confidence: typeof low) => ({
    text,
    language: "it",
    segments: [{ start: 0, end: 1.5, text, ...confidence }],
  });
  const zoneCases: Array<[string, ReturnType<typeof phrase>, string]> = [
    ["'Grazie a tutti.' with low confidence", phrase("Grazie a tutti.", low), ""],
    ["'Grazie.' with low confidence", phrase(" Grazie.", low), ""],
    ["'Thank you.' with low confidence", phrase("Thank you.", low), ""],
    ["'so' with low confidence", phrase("so", low), ""],
    ["punctuation alone", phrase("...", high), ""],
    ["'Grazie.' with high confidence passes", phrase("Grazie.", high), "Grazie."],
    ["a phrase inside a longer answer passes", phrase("Grazie. A domani.", low), "Grazie. A domani."],
  ];
  it.each(zoneCases)("zone machine: %s", async (_name, transcript, expected) => {
    s.zoneWhisper.setTranscript(transcript);
    const answer = await s.transcribe(
      toneWav({ dbfs: -30, seconds: 4 }),
      { response_format: "verbose_json" },
      "a.wav",
    );
    expect(answer.status).toBe(200);
    expect(engineUsed()).toBe("zone");
    expect(answer.body.text.trim()).toBe(expected);
    // Emptied text keeps the duration of the file.
    expect(answer.body.duration).toBeCloseTo(4, 2);
    if (expected === "") expect(answer.body.segments).toEqual([]);
  });

  it("answers of the fallback server pass as they come", async () => {
    s.fallbackWhisper.setTranscript(phrase("Grazie.", low));
    const answer = await s.transcribe(toneWav({ dbfs: -30, seconds: 2 }), { model: "asr-1-hd" }, "a.wav");
    expect(engineUsed()).toBe("fallback");
    expect(answer.body.text).toBe("Grazie.");
  });
});

describe("Transcription response", () => {
  const transcript = {
    text: " Buongiorno a tutti. Come state?",
    language: "it",
    duration: 4,
    segments: [
      { start: 0.4, end: 1.9, text: " Buongiorno a tutti.", no_speech_prob: 0.02, avg_logprob: -0.2 },
      { start: 2.3, end: 3.6, text: " Come state?", no_speech_prob: 0.03, avg_logprob: -0.25 },
    ],
    words: [
      { word: "Buongiorno", start: 0.5, end: 1.0, probability: 0.9 },
      { word: "a", start: 1.0, end: 1.2, probability: 0.9 },
      { word: "tutti.", start: 1.2, end: 1.9, probability: 0.9 },
      { word: "Come", start: 2.5, end: 2.9, probability: 0.9 },
      { word: "state?", start: 2.9, end: 3.6, probability: 0.9 },
    ],
  };

  it("json: an object with text only", async () => {
    s.zoneWhisper.setTranscript(transcript);
    const answer = await s.transcribe(TONE, {}, "a.wav");
    expect(answer.body).toEqual({ text: transcript.text.trim() });
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
  });

  it("text: the bare text as text/plain; charset=utf-8", async () => {
    s.zoneWhisper.setTranscript(transcript);
    const answer = await s.transcribe(TONE, { response_format: "text" }, "a.wav");
    expect(answer.text).toBe(transcript.text.trim());
    expect(answer.headers.get("content-type")).toBe("text/plain; charset=utf-8");
  });

  it("verbose_json from a zone machine: segments numbered from 1, following each other from 0, no_speech_prob null, no other fields", async () => {
    s.zoneWhisper.setTranscript(transcript);
    const answer = await s.transcribe(TONE, { response_format: "verbose_json" }, "a.wav");
    expect(answer.body).toEqual({
      task: "transcribe",
      language: "it",
      duration: 2,
      text: transcript.text.trim(),
      segments: [
        { id: 1, start: 0, end: 1.9, text: " Buongiorno a tutti.", no_speech_prob: null },
        { id: 2, start: 1.9, end: 3.6, text: " Come state?", no_speech_prob: null },
      ],
    });
  });

  it("verbose_json with word timings (fallback server): top-level words with a leading space, segments start at their first word, no_speech_prob kept", async () => {
    s.fallbackWhisper.setTranscript(transcript);
    const answer = await s.transcribe(TONE, {
      response_format: "verbose_json",
      "timestamp_granularities[]": ["word", "segment"],
    });
    expect(engineUsed()).toBe("fallback");
    expect(answer.body.segments).toEqual([
      { id: 1, start: 0.5, end: 1.9, text: " Buongiorno a tutti.", no_speech_prob: 0.02 },
      { id: 2, start: 2.5, end: 3.6, text: " Come state?", no_speech_prob: 0.03 },
    ]);
    expect(answer.body.words[0]).toEqual({ word: " Buongiorno", start: 0.5, end: 1, probability: 0.9 });
    expect(answer.body.words.every((word: { word: string }) => word.word.startsWith(" "))).toBe(true);
  });

  it("the language a server names in words ('italian') is shown as its code", async () => {
    s.zoneWhisper.configure({ languageAsName: true });
    s.zoneWhisper.setTranscript({ ...transcript, language: "it" });
    const answer = await s.transcribe(TONE, { response_format: "verbose_json" }, "a.wav");
    expect(answer.body.language).toBe("it");
    s.zoneWhisper.configure({ languageAsName: false });
  });
});

describe("Placement rule 3: a zone machine that does not answer hands over to the fallback server", () => {
  it("a zone machine that takes the upload and never answers is given up after engines.zone_transcription_timeout_seconds; the fallback server answers (no X-Zona)", async () => {
    const stack = await startAudioStack({
      config: { engines: { zone_transcription_timeout_seconds: 1, transcription_timeout_seconds: 8 } },
    });
    try {
      await stack.zoneWhisper.setMode("hang");
      const answer = await stack.transcribe(TONE, {}, "a.wav");
      expect(answer.status, answer.text).toBe(200);
      expect(answer.headers.get("x-zona")).toBeNull();
      expect(answer.body.text).toMatch(/^Fake transcript/);
      expect(stack.zoneWhisper.requestsTo("/v1/audio/transcriptions")).toHaveLength(1);
      expect(stack.fallbackWhisper.requestsTo("/v1/audio/transcriptions")).toHaveLength(1);
      const records = await stack.usage();
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ outcome: "ok", units: { seconds: 2 } });
    } finally {
      await stack.close();
    }
  });
});

describe("Limits: transcription time 300 seconds, then 504", () => {
  it("a transcription still running at the limit answers 504 with an HTML page and costs nothing", async () => {
    const stack = await startAudioStack({
      config: { engines: { transcription_timeout_seconds: 0.5, zone_transcription_timeout_seconds: 0.2 } },
    });
    try {
      await stack.zoneWhisper.setMode("hang");
      await stack.fallbackWhisper.setMode("hang");
      const answer = await stack.transcribe(TONE, {}, "a.wav");
      expect(answer.status).toBe(504);
      expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
      expect(answer.text).toMatch(/504/);
      const [record] = await stack.usage();
      expect(record).toMatchObject({ outcome: "failed", cost: 0 });
    } finally {
      await stack.close();
    }
  });
});
