import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createPiperAdapter, PIPER_VOICES } from "../../../src/engines/adapters/piper-adapter.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { SpeechEngine } from "../../../src/engines/modalities.ts";
import type { SpeechCall, VoiceName } from "../../../src/engines/types.ts";
import {
  FAKE_PIPER_SAMPLE_RATE,
  FAKE_PIPER_SECONDS_PER_CHARACTER,
  FakePiperServer,
  FakeServer,
  fakeMachine,
  wavInfo,
} from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakePiperServer();
let client: UpstreamClient;
let speak: SpeechEngine["speak"];
const signal = () => new AbortController().signal;
const machine = () => fakeMachine("piper", fake.url);
const call = (voice: VoiceName, text = "Buongiorno a tutti."): SpeechCall => ({
  text,
  voice,
  language: "it",
});

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient({ headersMs: 300 });
  speak = createPiperAdapter(client).speech.speak;
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
afterEach(async () => {
  await fake.setMode("normal", { models: undefined });
  fake.clearRequests();
});

describe("piper adapter", () => {
  const table: Array<[VoiceName, string]> = [
    ["paola", "it_IT-paola-medium"],
    ["riccardo", "it_IT-riccardo-x_low"],
    ["amy", "en_US-amy-medium"],
    ["ryan", "en_US-ryan-high"],
    ["thorsten", "de_DE-thorsten-medium"],
    ["siwis", "fr_FR-siwis-medium"],
  ];
  it("maps every own voice to its Piper model", () => {
    expect(Object.entries(PIPER_VOICES).sort()).toEqual([...table].sort());
  });

  for (const [voice, model] of table) {
    it(`${voice}: posts {text, voice: ${model}} to / and returns the WAV as sent`, async () => {
      const text = `Testo per ${voice}.`;
      const wav = await speak(machine(), call(voice, text), signal());
      expect(fake.lastRequest).toMatchObject({
        method: "POST",
        path: "/synthesize",
        body: { text, voice: model },
      });
      expect(fake.lastRequest.headers["content-type"]).toBe("application/json");
      expect(fake.voicesAsked).toEqual([model]);
      const info = wavInfo(wav);
      expect(info).toMatchObject({ channels: 1, sampleRate: FAKE_PIPER_SAMPLE_RATE, bitsPerSample: 16 });
      const samples = Math.round(text.length * FAKE_PIPER_SECONDS_PER_CHARACTER * FAKE_PIPER_SAMPLE_RATE);
      expect(info?.dataBytes).toBe(samples * 2);
      fake.clearRequests();
    });
  }

  it("maps a 200 answer that is not a WAV file to protocol", async () => {
    const broken = new FakeServer({
      errorBody: (_status, message) => message,
      handle: () => ({
        type: "binary",
        status: 200,
        contentType: "audio/wav",
        body: Buffer.from("<html>busy</html>"),
      }),
    });
    await broken.start();
    try {
      const error = await failure(speak(fakeMachine("piper", broken.url), call("amy"), signal()));
      expect([error.kind, error.retryable]).toEqual(["protocol", true]);
    } finally {
      await broken.close();
    }
  });

  it("the voice models come from engines.piper_voices", async () => {
    const voices = { ...PIPER_VOICES, amy: "en_US-amy-high" };
    const configured = createPiperAdapter(client, voices).speech.speak;
    await configured(machine(), call("amy"), signal());
    await configured(machine(), call("ryan"), signal());
    expect(fake.voicesAsked).toEqual(["en_US-amy-high", "en_US-ryan-high"]);
  });

  it("a server before piper-tts 1.5 (POST /) is asked there, and remembered", async () => {
    const legacy = new FakePiperServer({ api: "root" });
    await legacy.start();
    try {
      const own = createPiperAdapter(client).speech.speak;
      const old = fakeMachine("piper", legacy.url);
      expect(wavInfo(await own(old, call("paola"), signal()))?.bitsPerSample).toBe(16);
      await own(old, call("paola"), signal());
      expect(legacy.requests.map((r) => [r.method, r.path, r.body])).toEqual([
        ["POST", "/synthesize", { text: "Buongiorno a tutti.", voice: "it_IT-paola-medium" }],
        ["POST", "/", { text: "Buongiorno a tutti.", voice: "it_IT-paola-medium" }],
        ["POST", "/", { text: "Buongiorno a tutti.", voice: "it_IT-paola-medium" }],
      ]);
      // The current server, on another url, is still asked at /synthesize.
      await own(machine(), call("paola"), signal());
      expect(fake.lastRequest.path).toBe("/synthesize");
    } finally {
      await legacy.close();
    }
  });

  it("a voice model the server has not downloaded is read by its default voice, with no error", async () => {
    fake.configure({ models: ["it_IT-paola-medium"] });
    await speak(machine(), call("amy"), signal());
    expect(fake.voicesAsked).toEqual(["en_US-amy-medium"]);
    expect(fake.voicesRead).toEqual(["it_IT-paola-medium"]);
  });

  it("maps a 500, refuse, hang, a cut answer and an empty text to typed failures", async () => {
    await fake.setMode("error500");
    const broken = await failure(speak(machine(), call("amy"), signal()));
    expect([broken.kind, broken.status, broken.retryable]).toEqual(["status", 500, true]);
    await fake.setMode("normal");
    const empty = await failure(speak(machine(), call("amy", "  "), signal()));
    expect([empty.kind, empty.status, empty.retryable]).toEqual(["status", 400, false]);
    await fake.setMode("refuse");
    expect((await failure(speak(machine(), call("amy"), signal()))).kind).toBe("connect");
    await fake.setMode("hang");
    expect((await failure(speak(machine(), call("amy"), signal()))).kind).toBe("timeout");
    await fake.setMode("dropMidStream");
    expect((await failure(speak(machine(), call("amy"), signal()))).kind).toBe("connect");
  });
});
