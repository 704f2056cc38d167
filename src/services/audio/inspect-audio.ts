import { invalidRequest } from "../../errors/catalogue.ts";
import { unsupportedAudioFormat } from "../../errors/media-errors.ts";
import { ACCEPTED_AUDIO_TYPES, type AudioContainer, detectAudioFormat } from "../../media/audio-format.ts";
import { audioDurationSeconds } from "../../media/duration.ts";
import { scanWavSilence } from "../../media/silence.ts";
import { readWavInfo, type WavInfo } from "../../media/wav.ts";

/** What an uploaded audio file turned out to be. */
export interface AudioInspection {
  /** The content type sent upstream (one of the accepted formats). */
  mime: string;
  container: AudioContainer;
  /** Seconds of audio; null when the file does not say. */
  durationSeconds: number | null;
  /** Measured silent (16-bit PCM WAV only, and only when asked). */
  silent: boolean;
}

/**
 * Reads what an uploaded file is, from its content only: the format (400 naming the detected type
 * and the accepted ones), the length, and, when `silenceCheck` is asked, whether a 16-bit PCM WAV
 * is silent (docs/audio-api.md#silent-audio).
 */
export async function inspectAudio(
  path: string,
  options: { silenceCheck: boolean },
): Promise<AudioInspection> {
  const format = await detectAudioFormat(path);
  if (!format.accepted) throw unsupportedAudioFormat(format.detected, ACCEPTED_AUDIO_TYPES);
  let wav: WavInfo | undefined;
  if (format.container === "wav") {
    const header = await readWavInfo(path);
    if (!header.ok) {
      throw invalidRequest(`The WAV file cannot be read: ${header.reason}.`, {
        param: "file",
        code: "invalid_file_format",
      });
    }
    wav = header.info;
  }
  const durationSeconds = await audioDurationSeconds(path, format.container, wav);
  const silent = options.silenceCheck && wav !== undefined ? (await scanWavSilence(path, wav)).silent : false;
  return { mime: format.mime, container: format.container, durationSeconds, silent };
}
