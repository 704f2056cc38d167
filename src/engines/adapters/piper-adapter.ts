import { PIPER_VOICE_DEFAULTS } from "../../config/schema.ts";
import type { UpstreamClient } from "../http/upstream-client.ts";
import { rootPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { type MachineConfig, UpstreamError, type VoiceName } from "../types.ts";
import { expectWav } from "./wav-answer.ts";

/** The Piper voice model behind each own voice by default (`engines.piper_voices` may change them). */
export const PIPER_VOICES: Readonly<Record<VoiceName, string>> = PIPER_VOICE_DEFAULTS;

/** The paths Piper's HTTP server has read text at: `/synthesize` since piper-tts 1.5, `/` before. */
const SYNTHESIS_PATHS = ["/synthesize", "/"] as const;
type SynthesisPath = (typeof SYNTHESIS_PATHS)[number];

/**
 * The adapter for Piper's HTTP server (piper1-gpl `python3 -m piper.http_server`): the text and the
 * voice model (from `voices`) are POSTed as JSON and the answer is a WAV file. The voice fixes the
 * language, so the call's `language` is not sent. Servers of piper-tts 1.5 and later read at
 * `/synthesize`, older ones at `/`: a server that does not know one path (404, or 405 where `/` is
 * its web page) is asked at the other, which is remembered for its url.
 */
export function createPiperAdapter(
  client: UpstreamClient,
  voices: Readonly<Record<VoiceName, string>> = PIPER_VOICES,
): ProtocolAdapter<"piper"> {
  const known = new Map<string, SynthesisPath>();
  const post = async (machine: MachineConfig, path: SynthesisPath, body: unknown, signal: AbortSignal) => {
    const answer = await client.binary({ machine, path: rootPath(machine, path), body, signal }, "audio/wav");
    return expectWav(answer.body, "the Piper server");
  };
  return {
    speech: {
      async speak(machine, call, signal) {
        const body = { text: call.text, voice: voices[call.voice] };
        const url = machine.url ?? "";
        const first = known.get(url) ?? SYNTHESIS_PATHS[0];
        try {
          return await post(machine, first, body, signal);
        } catch (error) {
          if (!(error instanceof UpstreamError) || (error.status !== 404 && error.status !== 405))
            throw error;
        }
        const other = first === "/" ? "/synthesize" : "/";
        const wav = await post(machine, other, body, signal);
        known.set(url, other);
        return wav;
      },
    },
  };
}
