/** A request to the espeak worker. */
export interface EspeakRequest {
  id: number;
  text: string;
  /** An espeak-ng voice ("it+f3"). */
  voice: string;
}

/** The worker's answer: the WAV file, or why there is none. */
export type EspeakReply = { id: number; wav: Uint8Array } | { id: number; error: string };
