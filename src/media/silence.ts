import { open } from "node:fs/promises";
import type { WavInfo } from "./wav.ts";

/** How the silence check reads a WAV (docs/audio-api.md#silent-audio). */
export interface SilenceOptions {
  /** A stretch louder than this (RMS, dBFS) sends the file to the model. */
  thresholdDbfs?: number;
  /** Most sample bytes read; a longer file is never called silent. */
  maxBytes?: number;
  /** Length of one measured stretch, in milliseconds of audio. */
  stretchMs?: number;
}

/** What the silence check found. */
export interface SilenceScan {
  /** False when the format is not measured (anything but 16-bit PCM), which means "not silent". */
  measured: boolean;
  /** True only when every sample was read and no stretch was louder than the threshold. */
  silent: boolean;
  /** Sample bytes read before the check decided. */
  bytesScanned: number;
  /** RMS level of the loudest stretch read, in dBFS (-Infinity for digital silence or nothing read). */
  loudestDbfs: number;
}

/** About -50 dBFS, between quiet noise (~-59, silent) and louder noise (~-48, sent on). */
export const SILENCE_THRESHOLD_DBFS = -50;
/** At most the first 2,000,000 bytes of samples are read. */
export const SILENCE_MAX_BYTES = 2_000_000;
const DEFAULT_STRETCH_MS = 20;
// Reads go in blocks of many stretches: one syscall per 20 ms of audio would be wasteful.
const READ_BLOCK_BYTES = 64 * 1024;
const FULL_SCALE = 32768;

/**
 * Decides whether a WAV is silent enough to answer with an empty transcript without asking the
 * model. Only 16-bit PCM is measured; the file is read through a handle in blocks so a
 * large upload never sits in memory whole.
 */
export async function scanWavSilence(
  path: string,
  info: WavInfo,
  options: SilenceOptions = {},
): Promise<SilenceScan> {
  if (info.formatTag !== "pcm" || info.bitsPerSample !== 16) {
    return { measured: false, silent: false, bytesScanned: 0, loudestDbfs: Number.NEGATIVE_INFINITY };
  }
  const threshold = options.thresholdDbfs ?? SILENCE_THRESHOLD_DBFS;
  const maxBytes = options.maxBytes ?? SILENCE_MAX_BYTES;
  const frameBytes = info.blockAlign;
  const stretchFrames = Math.max(
    1,
    Math.round((info.sampleRate * (options.stretchMs ?? DEFAULT_STRETCH_MS)) / 1000),
  );
  const stretchBytes = stretchFrames * frameBytes;
  const limit = Math.floor(Math.min(info.dataBytes, maxBytes) / frameBytes) * frameBytes;
  const blockBytes = Math.max(1, Math.floor(READ_BLOCK_BYTES / stretchBytes)) * stretchBytes;

  const handle = await open(path, "r");
  try {
    const block = Buffer.alloc(blockBytes);
    let scanned = 0;
    let loudest = Number.NEGATIVE_INFINITY;
    while (scanned < limit) {
      const want = Math.min(blockBytes, limit - scanned);
      const { bytesRead } = await handle.read(block, 0, want, info.dataOffset + scanned);
      // Whole samples only: a trailing odd byte cannot be measured.
      const usable = bytesRead - (bytesRead % 2);
      if (usable === 0) break;
      for (let start = 0; start < usable; start += stretchBytes) {
        const end = Math.min(start + stretchBytes, usable);
        const level = rmsDbfs(block, start, end);
        if (level > loudest) loudest = level;
        if (level > threshold) {
          return { measured: true, silent: false, bytesScanned: scanned + end, loudestDbfs: loudest };
        }
      }
      scanned += usable;
      if (bytesRead < want) break;
    }
    // Rule 3: quiet so far is not enough, all of the samples must have been read.
    return { measured: true, silent: scanned >= info.dataBytes, bytesScanned: scanned, loudestDbfs: loudest };
  } finally {
    await handle.close();
  }
}

/** RMS of the 16-bit samples in buf[start, end), in dBFS. */
function rmsDbfs(buf: Buffer, start: number, end: number): number {
  let sumSquares = 0;
  let count = 0;
  for (let pos = start; pos + 1 < end; pos += 2) {
    const sample = buf.readInt16LE(pos);
    sumSquares += sample * sample;
    count++;
  }
  if (count === 0) return Number.NEGATIVE_INFINITY;
  return 20 * Math.log10(Math.sqrt(sumSquares / count) / FULL_SCALE);
}
