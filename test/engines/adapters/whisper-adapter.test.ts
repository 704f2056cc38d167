import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createWhisperAdapter } from "../../../src/engines/adapters/whisper-adapter.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { TranscriptionEngine } from "../../../src/engines/modalities.ts";
import type { TranscriptionCall } from "../../../src/engines/types.ts";
import { UpstreamError } from "../../../src/engines/types.ts";
import {
  DEFAULT_WHISPER_SETTINGS,
  FakeWhisperServer,
  fakeMachine,
  formValues,
  toneWav,
} from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeWhisperServer();
let client: UpstreamClient;
let transcribe: TranscriptionEngine["transcribe"];
let dir: string;
let wavPath: string;
const wav = toneWav({ seconds: 1, sampleRate: 16_000 });
const signal = () => new AbortController().signal;
const machine = () => fakeMachine("whisper", fake.url, { api_key: "asr-key" });

function call(overrides: Partial<TranscriptionCall> = {}): TranscriptionCall {
  return {
    model: "asr-1",
    file: { path: wavPath, size: wav.length, mime: "audio/wav", filename: "memo.wav" },
    words: false,
    ...overrides,
  };
}

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300 });
  transcribe = createWhisperAdapter(client).transcription.transcribe;
  dir = await mkdtemp(join(tmpdir(), "zona-whisper-"));
  wavPath = join(dir, "upload.bin");
  await writeFile(wavPath, wav);
});
afterAll(async () => {
  try {
    await client.close();
    await fake.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
afterEach(async () => {
  await fake.setMode("normal");
  fake.configure({ ...DEFAULT_WHISPER_SETTINGS });
  fake.clearRequests();
});

describe("whisper adapter: the upload", () => {
  it("streams the file under `file` with the call's filename and type, and the key as bearer", async () => {
    await transcribe(machine(), call(), signal());
    expect(fake.lastRequest.path).toBe("/v1/audio/transcriptions");
    expect(fake.lastRequest.headers.authorization).toBe("Bearer asr-key");
    expect(fake.lastRequest.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    const [file] = fake.lastUpload.files;
    expect(file).toMatchObject({
      field: "file",
      filename: "memo.wav",
      mimeType: "audio/wav",
      size: wav.length,
    });
    expect(file?.head).toEqual(wav.subarray(0, 16));
  });

  const cases: Array<{ name: string; call: Partial<TranscriptionCall>; fields: Array<[string, string]> }> = [
    {
      name: "only model and verbose_json when nothing else is asked",
      call: {},
      fields: [
        ["model", "asr-1"],
        ["response_format", "verbose_json"],
      ],
    },
    {
      name: "language, prompt and temperature when given",
      call: { model: "asr-1-hd", language: "it", prompt: "Zona, Ticino", temperature: 0.2 },
      fields: [
        ["model", "asr-1-hd"],
        ["response_format", "verbose_json"],
        ["language", "it"],
        ["prompt", "Zona, Ticino"],
        ["temperature", "0.2"],
      ],
    },
    {
      name: "temperature 0 is sent, empty language and prompt are not",
      call: { language: "", prompt: "", temperature: 0 },
      fields: [
        ["model", "asr-1"],
        ["response_format", "verbose_json"],
        ["temperature", "0"],
      ],
    },
    {
      name: "both granularities when words are asked",
      call: { words: true },
      fields: [
        ["model", "asr-1"],
        ["response_format", "verbose_json"],
        ["timestamp_granularities[]", "segment"],
        ["timestamp_granularities[]", "word"],
      ],
    },
  ];
  for (const { name, call: overrides, fields } of cases) {
    it(`sends ${name}`, async () => {
      await transcribe(machine(), call(overrides), signal());
      expect(fake.lastUpload.fields).toEqual(fields);
    });
  }

  it("puts the endpoint under a url that already ends with /v1", async () => {
    await transcribe(fakeMachine("whisper", `${fake.url}/v1/`), call(), signal());
    expect(fake.lastRequest.path).toBe("/v1/audio/transcriptions");
  });
});

describe("whisper adapter: the answer", () => {
  it("reads speaches' verbose_json: trimmed text, code, duration, segments with their confidences", async () => {
    const result = await transcribe(machine(), call({ language: "it" }), signal());
    expect(result).toEqual({
      text: `Fake transcript of ${wav.length} bytes.`,
      language: "it",
      duration: 1,
      segments: [
        { start: 0, end: 0.5, text: " Fake transcript", no_speech_prob: 0.01, avg_logprob: -0.2 },
        { start: 0.5, end: 1, text: ` of ${wav.length} bytes.`, no_speech_prob: 0.01, avg_logprob: -0.2 },
      ],
    });
    expect(result.words).toBeUndefined();
  });

  it("returns the top-level words, each with a leading space, only when asked", async () => {
    fake.setTranscript({
      text: "Ciao mondo",
      language: "it",
      duration: 1,
      segments: [{ start: 0, end: 1, text: " Ciao mondo" }],
      words: [
        { word: "Ciao", start: 0, end: 0.4, probability: 0.8 },
        { word: " mondo", start: 0.5, end: 1, probability: 0.7 },
      ],
    });
    const result = await transcribe(machine(), call({ words: true }), signal());
    expect(result.words).toEqual([
      { word: " Ciao", start: 0, end: 0.4, probability: 0.8 },
      { word: " mondo", start: 0.5, end: 1, probability: 0.7 },
    ]);
  });

  it("turns a language name into its code, as whisper.cpp and OpenAI answer it", async () => {
    fake.configure({ languageAsName: true });
    for (const [asked, code] of [
      ["it", "it"],
      ["en", "en"],
      ["de", "de"],
      ["fr", "fr"],
    ] as const) {
      const result = await transcribe(machine(), call({ language: asked }), signal());
      expect(formValues(fake.lastUpload, "language")).toEqual([asked]);
      expect(result.language).toBe(code);
    }
  });

  it("reads whisper.cpp's dialect: no no_speech_prob (null), tokens joined back into words", async () => {
    fake.configure({ style: "whisper.cpp" });
    fake.setTranscript({
      text: "Buongiorno a tutti.",
      language: "it",
      duration: 2,
      segments: [{ start: 0, end: 2, text: " Buongiorno a tutti.", avg_logprob: -0.3 }],
      words: [
        { word: " Buongiorno", start: 0, end: 1, probability: 0.9 },
        { word: " a", start: 1, end: 1.2, probability: 0.5 },
        { word: " tutti.", start: 1.2, end: 2, probability: 0.7 },
      ],
    });
    const result = await transcribe(machine(), call({ words: true }), signal());
    expect(result.language).toBe("it");
    expect(result.text).toBe("Buongiorno a tutti.");
    expect(result.segments).toEqual([
      { start: 0, end: 2, text: " Buongiorno a tutti.", no_speech_prob: null, avg_logprob: -0.3 },
    ]);
    expect(result.words?.map((w) => w.word)).toEqual([" Buongiorno", " a", " tutti."]);
    expect(result.words?.[0]).toMatchObject({ start: 0, end: 1 });
    expect(result.words?.[0]?.probability).toBeCloseTo(0.9);
  });

  it("gives null confidences when the server leaves them out", async () => {
    fake.configure({ omitConfidences: true });
    const result = await transcribe(machine(), call(), signal());
    for (const segment of result.segments) {
      expect([segment.no_speech_prob, segment.avg_logprob]).toEqual([null, null]);
    }
  });
});

describe("whisper adapter: failures", () => {
  it("maps a refused file (4xx) to a status failure with that status, not retryable", async () => {
    for (const status of [400, 415, 422]) {
      fake.configure({ refuseStatus: status });
      const error = await failure(transcribe(machine(), call(), signal()));
      expect([error.kind, error.status, error.retryable]).toEqual(["status", status, false]);
      expect(error.message).toContain("could not be decoded");
    }
  });

  it("maps an unknown model to status 404", async () => {
    fake.configure({ models: ["asr-1"] });
    try {
      const error = await failure(transcribe(machine(), call({ model: "asr-1-hd" }), signal()));
      expect([error.kind, error.status]).toEqual(["status", 404]);
    } finally {
      fake.configure({ models: undefined });
    }
  });

  const modes = [
    { mode: "refuse", kind: "connect", retryable: true },
    { mode: "error500", kind: "status", retryable: true },
    { mode: "dropMidStream", kind: "connect", retryable: true },
  ] as const;
  for (const { mode, kind, retryable } of modes) {
    it(`maps ${mode} to ${kind}`, async () => {
      await fake.setMode(mode);
      const error = await failure(transcribe(machine(), call(), signal()));
      expect([error.kind, error.retryable]).toEqual([kind, retryable]);
    });
  }

  it("waits past the client's first-byte timeout, and a hanging server times out on the caller's deadline", async () => {
    // The client's headers timeout is 300 ms: a transcription comes whole, so it does not apply.
    await fake.setMode("slow", { slowMs: 2_500 });
    await expect(transcribe(machine(), call(), signal())).resolves.toMatchObject({ language: "en" });
    await fake.setMode("hang");
    const error = await failure(transcribe(machine(), call(), AbortSignal.timeout(300)));
    expect([error.kind, error.retryable]).toEqual(["timeout", true]);
  });

  it("maps an answer that is not JSON to protocol", async () => {
    // The fake answers `response_format=text` as plain text; a server doing so for verbose_json is broken.
    const raw = await client
      .upload({
        machine: machine(),
        path: "/v1/audio/transcriptions",
        fields: [["response_format", "text"]],
        file: { field: "file", path: wavPath, filename: "a.wav", type: "audio/wav" },
        signal: signal(),
      })
      .catch((e: unknown) => e);
    expect(raw).toBeInstanceOf(UpstreamError);
    expect((raw as UpstreamError).kind).toBe("protocol");
  });

  it("maps an aborted signal to aborted", async () => {
    await fake.setMode("slow", { slowMs: 200 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    expect((await failure(transcribe(machine(), call(), controller.signal))).kind).toBe("aborted");
  });
});
