import { afterAll, describe, expect, it } from "vitest";
import { createEspeakAdapter } from "../../../src/engines/adapters/espeak-adapter.ts";
import { ESPEAK_VOICES, EspeakEngine } from "../../../src/engines/espeak/espeak-engine.ts";
import type { MachineConfig, SpeechCall, VoiceName } from "../../../src/engines/types.ts";
import { wavInfo } from "../../fakes/index.ts";

const engine = new EspeakEngine();
const speak = createEspeakAdapter(engine).speech.speak;
// espeak machines have no url: the adapter must not need one.
const machine: MachineConfig = {
  name: "builtin-espeak",
  zone: "ch",
  protocol: "espeak",
  models: ["tts-1"],
  upstream_names: {},
  capacity: 2,
};
const signal = () => new AbortController().signal;
const SAMPLE_RATE = 22_050;

afterAll(() => engine.close());

const texts: Record<VoiceName, [language: string, text: string]> = {
  paola: ["it", "Buongiorno, come state oggi?"],
  riccardo: ["it", "La riunione comincia alle nove."],
  amy: ["en", "Good morning, how are you today?"],
  ryan: ["en", "The meeting starts at nine."],
  thorsten: ["de", "Guten Morgen, wie geht es Ihnen?"],
  siwis: ["fr", "Bonjour, comment allez-vous aujourd'hui ?"],
};

describe("espeak adapter (built-in espeak-ng in a worker thread)", () => {
  it("has an espeak-ng voice for each own voice", () => {
    expect(ESPEAK_VOICES).toEqual({
      paola: "it+f3",
      riccardo: "it+m3",
      amy: "en-us+f3",
      ryan: "en-us+m3",
      thorsten: "de+m3",
      siwis: "fr+f3",
    });
  });

  for (const [voice, [language, text]] of Object.entries(texts) as Array<[VoiceName, [string, string]]>) {
    it(`${voice} reads ${language} as a 16-bit PCM mono WAV of about a second or more`, async () => {
      const wav = await speak(machine, { text, voice, language }, signal());
      const info = wavInfo(wav);
      expect(info).toMatchObject({ channels: 1, sampleRate: SAMPLE_RATE, bitsPerSample: 16 });
      // A sentence of this length lasts well over a second.
      expect(info?.dataBytes).toBeGreaterThan(SAMPLE_RATE * 2);
      expect(wav.length).toBe(44 + (info?.dataBytes ?? 0));
    });
  }

  it("serves two concurrent calls", async () => {
    const call = (voice: VoiceName, text: string): SpeechCall => ({ text, voice, language: "en" });
    const [a, b] = await Promise.all([
      speak(machine, call("amy", "First of two calls."), signal()),
      speak(machine, call("ryan", "Second of two calls, a little longer."), signal()),
    ]);
    expect(wavInfo(a)?.dataBytes).toBeGreaterThan(SAMPLE_RATE);
    expect(wavInfo(b)?.dataBytes).toBeGreaterThan(SAMPLE_RATE);
  });

  it("reads a text that looks like options as text", async () => {
    const wav = await speak(machine, { text: "-w /etc/passwd", voice: "amy", language: "en" }, signal());
    // Read as an option, the text would be empty and the audio a fraction of a second.
    expect(wavInfo(wav)?.dataBytes).toBeGreaterThan(SAMPLE_RATE * 2);
  });

  it("answers an empty text with a valid, near-empty WAV", async () => {
    const wav = await speak(machine, { text: "", voice: "paola", language: "it" }, signal());
    expect(wavInfo(wav)).toMatchObject({ bitsPerSample: 16 });
  });
});
