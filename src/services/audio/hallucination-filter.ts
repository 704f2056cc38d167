import type { TranscribedSegment, Transcription } from "../../engines/types.ts";

// Phrases a speech model tends to invent on silence or noise.
const PHRASES = new Set(["grazie a tutti.", "grazie.", "thank you.", "so"]);
// Whisper's own "no speech" test uses 0.6 / -1.0; a phrase counts as a guess well before that.
const LOW_SPEECH_PROBABILITY = 0.3;
const LOW_LOGPROB = -0.7;

/**
 * Whether a zone machine's answer is an invented phrase: the whole answer is only one of the
 * listed phrases, every segment of it with low confidence, or punctuation alone. A segment whose
 * server gives no confidence counts as low.
 */
export function isHallucination(transcription: Transcription): boolean {
  const text = transcription.text.trim();
  if (text === "") return false;
  if (/^[\p{P}\p{S}\s]+$/u.test(text)) return true;
  if (!PHRASES.has(text.toLowerCase())) return false;
  return transcription.segments.every(lowConfidence);
}

function lowConfidence(segment: TranscribedSegment): boolean {
  const { no_speech_prob: noSpeech, avg_logprob: logprob } = segment;
  if (noSpeech === null && logprob === null) return true;
  return (
    (noSpeech !== null && noSpeech >= LOW_SPEECH_PROBABILITY) || (logprob !== null && logprob <= LOW_LOGPROB)
  );
}
