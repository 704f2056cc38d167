/**
 * Pure translations for OpenAI-style transcription servers. Zona always asks for `verbose_json`
 * (for the segments' confidences) and reads the dialects of:
 * - faster-whisper / speaches and OpenAI: segments in seconds, words at the top level (OpenAI's
 *   without a leading space nor a probability), `language` a code (speaches) or a name (OpenAI);
 * - whisper.cpp's server: `language` a name ("italian"), segments in seconds, no top-level
 *   words but the segment's tokens under `segments[].words` (" Hel", "lo", ","), which are
 *   joined back into words here; older builds give no `no_speech_prob`, and an error may come
 *   as `{"error": ...}` with status 200. Times given as `t0`/`t1` (centiseconds, whisper.cpp's
 *   internal unit) or `offsets.from`/`offsets.to` (milliseconds, whisper-cli's JSON) are read too.
 */
import type { TranscribedSegment, TranscribedWord, Transcription, TranscriptionCall } from "../types.ts";
import { UpstreamError } from "../types.ts";
import {
  expectPayload,
  isPayload,
  numberField,
  type Payload,
  stringField,
  throwIfErrorPayload,
} from "./payload.ts";
import { languageCode } from "./whisper-languages.ts";

/**
 * The text fields of `POST /v1/audio/transcriptions` (the file is sent beside them); `model` is the
 * machine's name for the catalogue model.
 */
export function whisperFields(call: TranscriptionCall, model = call.model): Array<[string, string]> {
  const fields: Array<[string, string]> = [
    ["model", model],
    ["response_format", "verbose_json"],
  ];
  if (call.language) fields.push(["language", call.language]);
  if (call.prompt) fields.push(["prompt", call.prompt]);
  if (call.temperature !== undefined) fields.push(["temperature", String(call.temperature)]);
  if (call.words) {
    fields.push(["timestamp_granularities[]", "segment"], ["timestamp_granularities[]", "word"]);
  }
  return fields;
}

/** A `verbose_json` answer as a Transcription; `words` is present exactly when they were asked. */
export function fromWhisper(raw: unknown, words: boolean): Transcription {
  if (isPayload(raw)) throwIfErrorPayload(raw);
  const body = expectPayload(raw, "a transcription");
  const rawSegments = body.segments ?? [];
  if (!Array.isArray(rawSegments)) {
    throw new UpstreamError("protocol", "the upstream sent transcription segments that are not a list");
  }
  const segmentPayloads = rawSegments.map((segment) => expectPayload(segment, "a transcription segment"));
  const segments = segmentPayloads.map(toSegment);
  const text = stringField(body.text) ?? (Array.isArray(body.segments) ? joinTexts(segments) : undefined);
  if (text === undefined)
    throw new UpstreamError("protocol", "the upstream sent a transcription without text");
  const language = stringField(body.language);
  const transcription: Transcription = {
    text: text.trim(),
    language: language === undefined ? null : languageCode(language),
    duration: numberField(body.duration) ?? null,
    segments,
  };
  if (words) {
    transcription.words = Array.isArray(body.words)
      ? body.words.map((word) => toWord(expectPayload(word, "a transcribed word")))
      : wordsFromTokens(segmentPayloads);
  }
  return transcription;
}

function joinTexts(segments: TranscribedSegment[]): string {
  return segments.map((segment) => segment.text).join("");
}

function toSegment(segment: Payload): TranscribedSegment {
  const { start, end } = times(segment, "a transcription segment");
  return {
    start,
    end,
    text: stringField(segment.text) ?? "",
    no_speech_prob: numberField(segment.no_speech_prob) ?? null,
    avg_logprob: numberField(segment.avg_logprob) ?? null,
  };
}

/**
 * A word as OpenAI sends it: with one leading space. A server that does not rate its words
 * (OpenAI itself) gets probability 1, as a word of the answer always has a number there.
 */
function toWord(word: Payload): TranscribedWord {
  const { start, end } = times(word, "a transcribed word");
  const text = stringField(word.word) ?? "";
  return { word: ` ${text.trimStart()}`, start, end, probability: numberField(word.probability) ?? 1 };
}

/**
 * Words from the tokens whisper.cpp lists under each segment: a token that starts with a space
 * (or starts a segment) starts a word, the others (" Hel" + "lo" + ",") continue it; a word's
 * probability is the mean of its tokens', as openai/whisper computes it. When no token starts
 * with a space, or all do, each entry already is a word.
 */
function wordsFromTokens(segments: Payload[]): TranscribedWord[] {
  const tokens = segments.map((segment) =>
    (Array.isArray(segment.words) ? segment.words : [])
      .map((token) => expectPayload(token, "a transcribed word"))
      .filter((token) => (stringField(token.word) ?? "").trim().length > 0),
  );
  const spaced = tokens.flat().map((token) => /^\s/.test(stringField(token.word) ?? ""));
  const join = spaced.includes(true) && spaced.includes(false);
  const words: TranscribedWord[] = [];
  for (const segmentTokens of tokens) {
    let current: { word: TranscribedWord; probabilities: number[] } | undefined;
    const flush = () => {
      if (current === undefined) return;
      const { probabilities } = current;
      const sum = probabilities.reduce((a, b) => a + b, 0);
      words.push({ ...current.word, probability: probabilities.length > 0 ? sum / probabilities.length : 1 });
    };
    for (const token of segmentTokens) {
      const text = stringField(token.word) ?? "";
      const { start, end } = times(token, "a transcribed word");
      const probability = numberField(token.probability);
      if (current !== undefined && join && !/^\s/.test(text)) {
        current.word.word += text;
        current.word.end = end;
        if (probability !== undefined) current.probabilities.push(probability);
        continue;
      }
      flush();
      current = {
        word: { word: ` ${text.trimStart()}`, start, end, probability: 1 },
        probabilities: probability === undefined ? [] : [probability],
      };
    }
    flush();
  }
  return words;
}

/** Start and end in seconds, from whichever fields the server uses; a `protocol` failure without them. */
function times(item: Payload, what: string): { start: number; end: number } {
  let start = numberField(item.start);
  let end = numberField(item.end);
  if (start === undefined || end === undefined) {
    const t0 = numberField(item.t0);
    const t1 = numberField(item.t1);
    const offsets = isPayload(item.offsets) ? item.offsets : {};
    const from = numberField(offsets.from);
    const to = numberField(offsets.to);
    if (t0 !== undefined && t1 !== undefined) [start, end] = [t0 / 100, t1 / 100];
    else if (from !== undefined && to !== undefined) [start, end] = [from / 1000, to / 1000];
  }
  if (start === undefined || end === undefined) {
    throw new UpstreamError("protocol", `the upstream sent ${what} without start and end times`);
  }
  return { start, end };
}
