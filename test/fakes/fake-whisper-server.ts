import { type FakeMultipart, formValues, isMultipart } from "./fake-multipart.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
  takeKnobs,
} from "./fake-server.ts";

/** One segment of a configured transcript (confidences default to those of clear speech). */
export interface FakeTranscriptSegment {
  start: number;
  end: number;
  text: string;
  no_speech_prob?: number;
  avg_logprob?: number;
}

/** One word of a configured transcript. */
export interface FakeTranscriptWord {
  word: string;
  start: number;
  end: number;
  probability?: number;
}

/**
 * What the fake answers for every file. Without segments the text is one segment over the whole
 * duration; without words they are spread evenly over their segments.
 */
export interface FakeTranscript {
  text: string;
  /** A code ("it"); default: the `language` field sent, else "en". */
  language?: string;
  /** Seconds; default: the file's size read as 16 kHz 16-bit mono. */
  duration?: number;
  segments?: FakeTranscriptSegment[];
  words?: FakeTranscriptWord[];
}

/** Knobs of the whisper fake, changeable with `configure`. */
export interface FakeWhisperSettings {
  /** What every transcription answers; undefined: "Fake transcript of <size> bytes." in two segments. */
  transcript: FakeTranscript | undefined;
  /**
   * `speaches` (faster-whisper; the default): language as a code, top-level words when asked.
   * `whisper.cpp`: language as a name, no `no_speech_prob`, the segment's tokens under
   * `segments[].words` (words cut in pieces: " Fa", "ke") and no top-level words.
   */
  style: "speaches" | "whisper.cpp";
  /** Answer `language` as a name ("italian"), as whisper.cpp and OpenAI do. */
  languageAsName: boolean;
  /** Leave `no_speech_prob` and `avg_logprob` out of the segments. */
  omitConfidences: boolean;
  /** Refuse every file with this status ("could not decode the audio"); undefined: accept them. */
  refuseStatus: number | undefined;
}

/** The defaults of the whisper knobs. */
export const DEFAULT_WHISPER_SETTINGS: FakeWhisperSettings = {
  transcript: undefined,
  style: "speaches",
  languageAsName: false,
  omitConfidences: false,
  refuseStatus: undefined,
};

const LANGUAGE_NAMES: Record<string, string> = {
  it: "italian",
  en: "english",
  de: "german",
  fr: "french",
  es: "spanish",
};

const WHISPER_KEYS = Object.keys(DEFAULT_WHISPER_SETTINGS) as Array<keyof FakeWhisperSettings>;
const TRANSCRIPTIONS = "/v1/audio/transcriptions";

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

// speaches is a FastAPI application: errors carry `detail`.
function errorBody(_status: number, message: string): unknown {
  return { detail: message };
}

const round = (x: number) => Math.round(x * 100) / 100;

function defaultTranscript(size: number): FakeTranscript {
  const duration = Math.max(0.5, round(size / 32_000));
  const half = round(duration / 2);
  return {
    text: `Fake transcript of ${size} bytes.`,
    duration,
    segments: [
      { start: 0, end: half, text: " Fake transcript" },
      { start: half, end: duration, text: ` of ${size} bytes.` },
    ],
  };
}

/** Words spread evenly over their segment, with a leading space each. */
function spreadWords(segments: FakeTranscriptSegment[]): FakeTranscriptWord[] {
  return segments.flatMap((segment) => {
    const words = segment.text.trim().split(/\s+/).filter(Boolean);
    const step = (segment.end - segment.start) / Math.max(1, words.length);
    return words.map((word, i) => ({
      word: ` ${word}`,
      start: round(segment.start + i * step),
      end: round(segment.start + (i + 1) * step),
      probability: 0.9,
    }));
  });
}

/** whisper.cpp's tokens for a word: the word cut after its first three characters. */
function tokensOf(word: FakeTranscriptWord): Array<Record<string, unknown>> {
  const cut = word.word.length > 4 ? 3 : word.word.length;
  const pieces = [word.word.slice(0, cut), word.word.slice(cut)].filter((piece) => piece.length > 0);
  const step = (word.end - word.start) / pieces.length;
  return pieces.map((piece, i) => ({
    word: piece,
    start: round(word.start + i * step),
    end: round(word.start + (i + 1) * step),
    t_dtw: -1,
    probability: word.probability ?? 0.9,
  }));
}

function transcribe(upload: FakeMultipart, size: number, knobs: FakeWhisperSettings): FakeReply {
  const transcript = knobs.transcript ?? defaultTranscript(size);
  const duration = transcript.duration ?? Math.max(0.5, round(size / 32_000));
  const segments = transcript.segments ?? [{ start: 0, end: duration, text: ` ${transcript.text}` }];
  const words = transcript.words ?? spreadWords(segments);
  const code = transcript.language ?? formValues(upload, "language")[0] ?? "en";
  const cpp = knobs.style === "whisper.cpp";
  const language = cpp || knobs.languageAsName ? (LANGUAGE_NAMES[code] ?? "english") : code;
  const format = formValues(upload, "response_format")[0] ?? "json";
  if (format === "text")
    return { type: "binary", status: 200, contentType: "text/plain", body: Buffer.from(transcript.text) };
  if (format !== "verbose_json") return json(200, { text: transcript.text });
  const wantWords = formValues(upload, "timestamp_granularities[]").includes("word");
  const temperature = Number(formValues(upload, "temperature")[0] ?? 0);
  const body: Record<string, unknown> = {
    task: "transcribe",
    language,
    duration,
    text: cpp ? segments.map((segment) => segment.text).join("") : transcript.text,
    segments: segments.map((segment, id) => {
      const inSegment = words.filter((word) => word.start >= segment.start && word.end <= segment.end);
      const confidences = knobs.omitConfidences
        ? {}
        : cpp
          ? { avg_logprob: segment.avg_logprob ?? -0.2 }
          : { avg_logprob: segment.avg_logprob ?? -0.2, no_speech_prob: segment.no_speech_prob ?? 0.01 };
      return {
        id,
        ...(cpp ? {} : { seek: 0 }),
        start: segment.start,
        end: segment.end,
        text: segment.text,
        tokens: [50364 + id],
        temperature,
        ...confidences,
        ...(cpp ? { words: inSegment.flatMap(tokensOf) } : { compression_ratio: 1.2 }),
      };
    }),
  };
  if (wantWords && !cpp) body.words = words.map((word) => ({ probability: 0.9, ...word }));
  return json(200, body);
}

function whisperProtocol(knobs: FakeWhisperSettings): FakeProtocol {
  return {
    errorBody,
    handle(request: FakeRequest, settings: FakeSettings): FakeReply {
      const { method, path } = request;
      const cpp = knobs.style === "whisper.cpp";
      if (method === "GET" && path === "/health") return json(200, { status: "ok" });
      // speaches lists its downloaded models; whisper.cpp's server has no such list.
      if (method === "GET" && path === "/v1/models" && !cpp) {
        const data = (settings.models ?? []).map((id) => ({
          id,
          created: 1_767_225_600,
          object: "model",
          owned_by: id.split("/")[0] ?? id,
          task: "automatic-speech-recognition",
        }));
        return json(200, { data, object: "list" });
      }
      if (method !== "POST" || path !== TRANSCRIPTIONS) return json(404, errorBody(404, "Not Found"));
      const upload = request.body;
      if (!isMultipart(upload)) return json(400, errorBody(400, "expected a multipart/form-data body"));
      const file = upload.files.find((f) => f.field === "file");
      if (file === undefined) return json(422, errorBody(422, "Field required: file"));
      const model = formValues(upload, "model")[0];
      // whisper.cpp serves the one model it was started with, whatever the request names.
      if (
        !cpp &&
        settings.models !== undefined &&
        (model === undefined || !settings.models.includes(model))
      ) {
        return json(404, errorBody(404, `Model '${model ?? ""}' is not installed locally.`));
      }
      if (knobs.refuseStatus !== undefined) {
        return json(knobs.refuseStatus, errorBody(knobs.refuseStatus, "The audio file could not be decoded"));
      }
      return transcribe(upload, file.size, knobs);
    },
  };
}

/**
 * A fake transcription server speaking the OpenAI protocol of faster-whisper / speaches (or, with
 * `style: "whisper.cpp"`, whisper.cpp's dialect of it): `POST /v1/audio/transcriptions` parses the
 * upload (fields and file size and first bytes land in the request log), `GET /health`. speaches
 * style: `GET /v1/models` lists `models`, and with `models` set another model name is refused with
 * 404; whisper.cpp style: no model list, and the `model` field is ignored.
 */
export class FakeWhisperServer extends FakeServer {
  readonly whisper: FakeWhisperSettings;

  constructor(settings: Partial<FakeSettings & FakeWhisperSettings> = {}) {
    const knobs: FakeWhisperSettings = { ...DEFAULT_WHISPER_SETTINGS };
    super(whisperProtocol(knobs), {});
    this.whisper = knobs;
    this.configure(settings);
  }

  /** Changes settings, the base ones and the whisper knobs alike. */
  override configure(settings: Partial<FakeSettings & FakeWhisperSettings>): void {
    super.configure(takeKnobs(settings, this.whisper, WHISPER_KEYS));
  }

  /** Sets what every transcription answers (undefined: back to the text made from the file size). */
  setTranscript(transcript: FakeTranscript | undefined): void {
    this.whisper.transcript = transcript;
  }

  /** The upload of the last request (throws when it was not one). */
  get lastUpload(): FakeMultipart {
    const body = this.lastRequest.body;
    if (!isMultipart(body)) throw new Error("the last request was not a multipart upload");
    return body;
  }
}
