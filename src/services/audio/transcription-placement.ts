/** What decides where a transcription runs (the rules: docs/audio-api.md#placement). */
export interface PlacementFacts {
  model: string;
  words: boolean;
  prompt: boolean;
  /** Seconds of audio; null when the file does not say. */
  durationSeconds: number | null;
  sizeBytes: number;
  /** The container detected from the content (wav, mp3, mp4, ogg, webm, flac, 3gpp, amr). */
  container: string;
}

/** Longest audio a zone machine takes: 10 minutes per file. */
export const ZONE_MAX_SECONDS = 600;
/** Largest file a zone machine takes. */
export const ZONE_MAX_BYTES = 25_000_000;
// A file whose length cannot be read is judged by its size: 10 minutes at 32 kbit/s.
const UNKNOWN_LENGTH_MAX_BYTES = (ZONE_MAX_SECONDS * 32_000) / 8;

/**
 * Why a transcription goes straight to the fallback server (rule 2), or undefined when a zone
 * machine may take it (rule 1): `asr-1-hd`, word timings, any prompt, audio over 10 minutes, a file
 * over 25 MB, 3GPP and AMR.
 */
export function fallbackReason(facts: PlacementFacts): string | undefined {
  if (facts.model !== "asr-1") return `model ${facts.model}`;
  if (facts.words) return "word timings";
  if (facts.prompt) return "prompt";
  if (facts.container === "3gpp" || facts.container === "amr") return `${facts.container} file`;
  if (facts.sizeBytes > ZONE_MAX_BYTES) return "file over 25 MB";
  if (facts.durationSeconds === null) {
    return facts.sizeBytes > UNKNOWN_LENGTH_MAX_BYTES ? "length unknown" : undefined;
  }
  if (facts.durationSeconds > ZONE_MAX_SECONDS) return "audio over 10 minutes";
  return undefined;
}
