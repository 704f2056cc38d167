import { fileTypeFromFile } from "file-type";

/** Containers the gateway knows how to measure; each accepted type belongs to exactly one. */
export type AudioContainer = "wav" | "mp3" | "mp4" | "ogg" | "webm" | "flac" | "3gpp" | "amr";

/** Accepted transcription types, in the spec's order, each with the container it names. */
const CONTAINER_OF = {
  "audio/wav": "wav",
  "audio/wave": "wav",
  "audio/x-wav": "wav",
  "audio/vnd.wave": "wav",
  "audio/mpeg": "mp3",
  "audio/mp3": "mp3",
  "audio/x-mpeg": "mp3",
  "audio/mp4": "mp4",
  "audio/m4a": "mp4",
  "audio/x-m4a": "mp4",
  "video/mp4": "mp4",
  "audio/ogg": "ogg",
  "video/ogg": "ogg",
  "application/ogg": "ogg",
  "audio/opus": "ogg",
  "audio/webm": "webm",
  "video/webm": "webm",
  "audio/flac": "flac",
  "audio/x-flac": "flac",
  "audio/3gpp": "3gpp",
  "video/3gpp": "3gpp",
  "audio/amr": "amr",
} as const satisfies Record<string, AudioContainer>;

/** One of the media types the spec accepts for transcription. */
export type AcceptedAudioType = keyof typeof CONTAINER_OF;

/** The 22 accepted transcription types, in the spec's order. */
export const ACCEPTED_AUDIO_TYPES: readonly AcceptedAudioType[] = Object.keys(
  CONTAINER_OF,
) as AcceptedAudioType[];

/** The one type reported for each container, whatever alias the detector used. */
const CANONICAL_TYPE: Record<AudioContainer, AcceptedAudioType> = {
  wav: "audio/wav",
  mp3: "audio/mpeg",
  mp4: "audio/mp4",
  ogg: "audio/ogg",
  webm: "audio/webm",
  flac: "audio/flac",
  "3gpp": "audio/3gpp",
  amr: "audio/amr",
};

/** What the content of an upload turned out to be. */
export type AudioFormat =
  | {
      accepted: true;
      /** The canonical accepted type of the container (audio/wav, audio/mpeg, audio/mp4, ...). */
      mime: AcceptedAudioType;
      container: AudioContainer;
      /** The type exactly as detected (e.g. "audio/ogg; codecs=opus", "video/mp4"), for logs. */
      detected: string;
    }
  | {
      accepted: false;
      /** The detected type (e.g. "image/png"), or "unknown" when the bytes match nothing. */
      detected: string;
    };

/**
 * Classifies a file by its magic bytes alone; the name and the declared type of an upload are
 * never consulted because either can lie. Reads only as much of the head as the detector needs.
 */
export async function detectAudioFormat(path: string): Promise<AudioFormat> {
  const found = await fileTypeFromFile(path);
  if (!found) return { accepted: false, detected: "unknown" };
  return classifyMime(found.mime);
}

/** Maps a detected media type onto the accepted list (parameters such as `codecs=` are ignored). */
export function classifyMime(detected: string): AudioFormat {
  const bare = detected.split(";")[0]?.trim().toLowerCase() ?? "";
  const container = Object.hasOwn(CONTAINER_OF, bare) ? CONTAINER_OF[bare as AcceptedAudioType] : undefined;
  if (!container) return { accepted: false, detected };
  return { accepted: true, mime: CANONICAL_TYPE[container], container, detected };
}

/** The accepted types as one comma-separated line, for the 400 message of a refused upload. */
export function acceptedFormatsText(): string {
  return ACCEPTED_AUDIO_TYPES.join(", ");
}
