import { open } from "node:fs/promises";
import { loadOnFirstUse } from "../load-on-first-use.ts";

// Loaded by the first upload it classifies: most requests never carry a file.
const loadFileType = loadOnFirstUse(() => import("file-type"));

/** Containers the gateway knows how to measure; each accepted type belongs to exactly one. */
export type AudioContainer = "wav" | "mp3" | "mp4" | "ogg" | "webm" | "flac" | "3gpp" | "amr";

/**
 * Accepted transcription types, each with the container it names, in the order of
 * docs/audio-api.md#accepted-formats.
 */
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

/** One of the media types accepted for transcription. */
export type AcceptedAudioType = keyof typeof CONTAINER_OF;

/** The 22 accepted transcription types, in the order above. */
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
      /**
       * What the content is, for the client's message: the detected type ("image/png",
       * "application/pdf"), `text/plain`, `text/html` or `application/json` for text, "unknown binary
       * data" when the bytes match nothing, "empty (0 bytes)" for an empty file.
       */
      detected: string;
    };

/**
 * Classifies a file by its magic bytes alone; the name and the declared type of an upload are
 * never consulted because either can lie. Reads only as much of the head as the detector needs.
 */
export async function detectAudioFormat(path: string): Promise<AudioFormat> {
  const found = await (await loadFileType()).fileTypeFromFile(path);
  if (!found) return { accepted: false, detected: await describeUnknown(path) };
  return classifyMime(found.mime);
}

/** The answer for content no signature matched. */
export const UNKNOWN_BINARY = "unknown binary data";
// Enough of a text to tell its kind; a JSON document is recognised only when it fits whole.
const TEXT_HEAD_BYTES = 8192;

/**
 * Names content that has no magic number: text (UTF-8 or ASCII) as `text/html`, `application/json`
 * or `text/plain`; anything else as unknown binary data.
 */
async function describeUnknown(path: string): Promise<string> {
  const handle = await open(path, "r");
  let head: Buffer;
  let whole: boolean;
  try {
    const buffer = Buffer.alloc(TEXT_HEAD_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    whole = bytesRead <= TEXT_HEAD_BYTES;
    head = buffer.subarray(0, Math.min(bytesRead, TEXT_HEAD_BYTES));
  } finally {
    await handle.close();
  }
  if (head.length === 0) return "empty (0 bytes)";
  const text = decodeText(head);
  if (text === undefined) return UNKNOWN_BINARY;
  return textKind(text, whole);
}

/** The text of a file's head (UTF-8 or ASCII), or undefined when it is not text (invalid encoding, control bytes). */
export function decodeText(head: Buffer): string | undefined {
  let text: string;
  try {
    // `stream` leaves a character cut at the end of the head undecoded instead of failing.
    text = new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: true });
  } catch {
    return undefined;
  }
  for (let i = 0; i < text.length; i += 1) if (isBinaryControl(text.charCodeAt(i))) return undefined;
  return text;
}

// Tab, line feed, form feed and carriage return are the only control characters text has.
function isBinaryControl(code: number): boolean {
  return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0c && code !== 0x0d) || code === 0x7f;
}

/** `text/html`, `application/json` (only a document read whole) or `text/plain`. */
export function textKind(text: string, whole: boolean): string {
  const start = text.replace(/^\ufeff/, "").trimStart();
  if (/^<!doctype\s+html[\s>]/i.test(start) || /<(html|head|body)[\s>]/i.test(start)) return "text/html";
  if (whole && /^[[{]/.test(start)) {
    try {
      JSON.parse(start);
      return "application/json";
    } catch {
      // text that only starts like JSON
    }
  }
  return "text/plain";
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
