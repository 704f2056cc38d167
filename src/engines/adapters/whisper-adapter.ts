import type { UpstreamClient } from "../http/upstream-client.ts";
import { openAiPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { upstreamModel } from "../served-models.ts";
import { fromWhisper, whisperFields } from "./whisper-transforms.ts";

/**
 * How long a transcription may take before its answer, as a safety net only: the answer comes
 * whole once the file is transcribed (minutes for a long recording on `asr-1-hd`), so the client's
 * first-byte timeout, meant for generations starting to stream, does not apply; the caller's
 * signal carries the real deadline (`engines.transcription_timeout_seconds`).
 */
export const TRANSCRIPTION_WAIT_MS = 3_600_000;

/**
 * The adapter for OpenAI-style transcription servers (faster-whisper / speaches, whisper.cpp's
 * server started with `--inference-path /v1/audio/transcriptions`): the file is streamed from
 * disk as a multipart upload, with the machine's name for the model (whisper.cpp ignores it).
 */
export function createWhisperAdapter(client: UpstreamClient): ProtocolAdapter<"whisper"> {
  return {
    transcription: {
      async transcribe(machine, call, signal) {
        const raw = await client.upload({
          machine,
          path: openAiPath(machine, "/audio/transcriptions"),
          fields: whisperFields(call, upstreamModel(machine, call.model)),
          file: { field: "file", path: call.file.path, filename: call.file.filename, type: call.file.mime },
          signal,
          headersTimeoutMs: TRANSCRIPTION_WAIT_MS,
        });
        return fromWhisper(raw, call.words);
      },
    },
  };
}
