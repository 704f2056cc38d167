import type { TranscribedWord, Transcription } from "../../engines/types.ts";

/** A segment as the client sees it: these fields and no others. */
export interface ShownSegment {
  id: number;
  start: number;
  end: number;
  text: string;
  no_speech_prob: number | null;
}

/** The `verbose_json` body. */
export interface VerboseTranscription {
  task: "transcribe";
  language: string;
  duration: number;
  text: string;
  segments: ShownSegment[];
  words?: TranscribedWord[];
}

/**
 * The `verbose_json` body of a transcription. Segments are numbered from 1; `no_speech_prob` is
 * null when a zone machine transcribed. With word timings each segment starts at its first word;
 * without them segments follow each other from 0 with no gaps.
 */
export function verboseTranscription(
  transcription: Transcription,
  options: { language: string; duration: number; zoneMachine: boolean; words: boolean },
): VerboseTranscription {
  const words = options.words ? (transcription.words ?? []).map(shownWord) : undefined;
  let previousEnd = 0;
  const segments = transcription.segments.map((segment, index): ShownSegment => {
    let start: number;
    if (words) {
      const first = words.find((word) => word.start >= segment.start - 0.01 && word.start < segment.end);
      start = first ? first.start : segment.start;
    } else {
      start = previousEnd;
    }
    const end = round(Math.max(segment.end, start));
    previousEnd = end;
    return {
      id: index + 1,
      start: round(start),
      end,
      text: segment.text,
      no_speech_prob: options.zoneMachine ? null : segment.no_speech_prob,
    };
  });
  return {
    task: "transcribe",
    language: options.language,
    duration: round(options.duration),
    text: transcription.text,
    segments,
    ...(words ? { words } : {}),
  };
}

function shownWord(word: TranscribedWord): TranscribedWord {
  const text = word.word.startsWith(" ") ? word.word : ` ${word.word}`;
  return { word: text, start: round(word.start), end: round(word.end), probability: word.probability };
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
