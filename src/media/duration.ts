import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { loadOnFirstUse } from "../load-on-first-use.ts";
import { amrDurationSeconds } from "./amr-duration.ts";
import type { AudioContainer } from "./audio-format.ts";
import { readWavInfo, type WavInfo } from "./wav.ts";
import { webmDurationFromBlocks } from "./webm-duration.ts";

// Loaded by the first upload it measures: most requests never carry audio.
const loadMusicMetadata = loadOnFirstUse(() => import("music-metadata"));

/** The type handed to music-metadata per container: it must pick its parser from our detection. */
const PARSER_TYPE: Partial<Record<AudioContainer, string>> = {
  mp3: "audio/mpeg",
  mp4: "audio/mp4",
  // 3GPP is the MP4 box format; music-metadata only knows it under the MP4 types.
  "3gpp": "audio/mp4",
  ogg: "audio/ogg",
  webm: "audio/webm",
  flac: "audio/flac",
};

/**
 * Length of an accepted upload in seconds (billing and the 10-minute rule), or null when the
 * file does not tell. WAV comes from its header; raw AMR from counting frames; the rest from
 * music-metadata, given the detected container so that a file's name can never steer it.
 */
export async function audioDurationSeconds(
  path: string,
  format: AudioContainer | { container: AudioContainer },
  wavInfo?: WavInfo,
): Promise<number | null> {
  const container = typeof format === "string" ? format : format.container;
  if (container === "wav") {
    if (wavInfo) return wavInfo.durationSeconds;
    const header = await readWavInfo(path);
    return header.ok ? header.info.durationSeconds : null;
  }
  if (container === "amr") return amrDurationSeconds(path);
  const parserType = PARSER_TYPE[container];
  if (!parserType) return null;
  const duration = await metadataDuration(path, parserType);
  if (duration === null && container === "webm") return webmDurationFromBlocks(path);
  return duration;
}

async function metadataDuration(path: string, mimeType: string): Promise<number | null> {
  const { size } = await stat(path);
  const { parseStream } = await loadMusicMetadata();
  const stream = createReadStream(path);
  try {
    const metadata = await parseStream(stream, { mimeType, size }, { duration: true, skipCovers: true });
    const duration = metadata.format.duration;
    return duration !== undefined && Number.isFinite(duration) && duration >= 0 ? duration : null;
  } catch {
    // A file the parser cannot follow has no known duration; the caller decides what that costs.
    return null;
  } finally {
    // Parsers that stop early (FLAC, MP4 with the index first) leave the rest of the stream unread.
    stream.destroy();
  }
}
