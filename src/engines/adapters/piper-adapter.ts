import type { UpstreamClient } from "../http/upstream-client.ts";
import { rootPath } from "../http/upstream-target.ts";
import type { EngineAdapter, VoiceName } from "../types.ts";
import { expectWav } from "./wav-answer.ts";

/** The Piper voice model behind each own voice (the server must have them downloaded). */
export const PIPER_VOICES: Readonly<Record<VoiceName, string>> = {
  paola: "it_IT-paola-medium",
  riccardo: "it_IT-riccardo-x_low",
  amy: "en_US-amy-medium",
  ryan: "en_US-ryan-high",
  thorsten: "de_DE-thorsten-medium",
  siwis: "fr_FR-siwis-medium",
};

/**
 * The adapter for Piper's HTTP server (piper1-gpl `python3 -m piper.http_server`): `POST /` with
 * the text and the voice model answers a WAV file. The voice fixes the language, so the call's
 * `language` is not sent.
 */
export function createPiperAdapter(client: UpstreamClient): EngineAdapter {
  return {
    async speak(machine, call, signal) {
      const answer = await client.binary(
        {
          machine,
          path: rootPath(machine, "/"),
          body: { text: call.text, voice: PIPER_VOICES[call.voice] },
          signal,
        },
        "audio/wav",
      );
      return expectWav(answer.body, "the Piper server");
    },
  };
}
