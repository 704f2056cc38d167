import { ESPEAK_VOICES, type EspeakEngine } from "../espeak/espeak-engine.ts";
import type { ProtocolAdapter } from "../modalities.ts";

/**
 * The adapter of the built-in espeak-ng engine: speech with no server and no GPU. The machine's
 * `url` is not used (espeak machines need none); the voice fixes the language, as with Piper.
 */
export function createEspeakAdapter(engine: EspeakEngine): ProtocolAdapter<"espeak"> {
  return {
    speech: {
      speak(_machine, call, signal) {
        return engine.synthesize(call.text, ESPEAK_VOICES[call.voice], signal);
      },
    },
  };
}
