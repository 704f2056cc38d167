import type { Config } from "../config/schema.ts";

/** One machine of the configuration: where an engine runs and what it serves. */
export type MachineConfig = Config["machines"][number];

/** A part of a chat message's content (text or image), in the OpenAI shape. */
export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } };

/** A chat message as validated, in the OpenAI shape. */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | ContentPart[] | null;
  name?: string;
  tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** Token counts as OpenAI reports them. */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/**
 * A validated chat request, as the adapters receive it. `params` holds only the honoured
 * parameters under their OpenAI names (temperature, top_p, max_tokens, stop, n, seed,
 * presence_penalty, frequency_penalty, logit_bias, logprobs, top_logprobs, parallel_tool_calls,
 * tools, tool_choice, response_format, user); `max_completion_tokens` arrives as `max_tokens`.
 */
export interface ChatCall {
  /** The catalogue id; the adapter sends the machine's name for it (see served-models.ts). */
  model: string;
  messages: ChatMessage[];
  params: Record<string, unknown>;
}

/** A validated text-completion request (`/v1/completions`). */
export interface CompletionCall {
  model: string;
  prompt: string;
  params: Record<string, unknown>;
}

/** The OpenAI `chat.completion` object, as every adapter returns it whatever its upstream speaks. */
export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: "assistant"; content: string | null; tool_calls?: ChatMessage["tool_calls"] };
    finish_reason: string | null;
    logprobs?: unknown;
  }>;
  usage: TokenUsage;
}

/** The OpenAI `chat.completion.chunk` object; the last one of a stream may carry `usage`. */
export interface ChatChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: { role?: "assistant"; content?: string | null; tool_calls?: unknown[] };
    /** Streamed `/v1/completions` only: the same text as `delta.content`, for text-completion clients. */
    text?: string;
    finish_reason: string | null;
    logprobs?: unknown;
  }>;
  usage?: TokenUsage | null;
}

/** The OpenAI `text_completion` object (non-streamed `/v1/completions`). */
export interface TextCompletion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; finish_reason: string | null; logprobs: unknown }>;
  usage: TokenUsage;
}

/** One streamed piece of a text completion; the last one may carry `usage`. */
export interface TextChunk {
  id: string;
  created: number;
  model: string;
  choices: Array<{ index: number; text: string; finish_reason: string | null }>;
  usage?: TokenUsage | null;
}

/** What a rerank upstream answers: a relevance score per document index. */
export interface RerankScore {
  index: number;
  relevance_score: number;
}

/** An uploaded audio file on disk, as the transcription adapters send it upstream. */
export interface AudioFile {
  path: string;
  /** Bytes. */
  size: number;
  /** The detected content type (one of the accepted formats, media/audio-format.ts). */
  mime: string;
  /** The name sent upstream (the client's, or one made from the format). */
  filename: string;
}

/** A validated transcription request, as the adapters receive it. */
export interface TranscriptionCall {
  /** The catalogue id (`asr-1` or `asr-1-hd`); the adapter sends the machine's name for it. */
  model: string;
  file: AudioFile;
  language?: string;
  prompt?: string;
  temperature?: number;
  /** Word timings asked (`timestamp_granularities[]` includes `word`). */
  words: boolean;
}

/** One segment of an upstream transcription, with the confidence the hallucination filter reads. */
export interface TranscribedSegment {
  start: number;
  end: number;
  text: string;
  /** Probability that the segment holds no speech; null when the server does not say. */
  no_speech_prob: number | null;
  /** Mean log-probability of the segment's tokens; null when the server does not say. */
  avg_logprob: number | null;
}

/** One word of an upstream transcription (`word` with a leading space, as OpenAI sends it). */
export interface TranscribedWord {
  word: string;
  start: number;
  end: number;
  probability: number;
}

/** What a transcription server answered, whatever its protocol. */
export interface Transcription {
  text: string;
  /** The language spoken or detected (two letters when the server says), null when it does not say. */
  language: string | null;
  /** Seconds of audio, as the server measured them; null when it does not say. */
  duration: number | null;
  segments: TranscribedSegment[];
  /** Present when word timings were asked. */
  words?: TranscribedWord[];
}

/** The six own voices. */
export type VoiceName = "paola" | "riccardo" | "amy" | "ryan" | "thorsten" | "siwis";

/** A validated speech request, as the adapters receive it: the voice is always one of the own six. */
export interface SpeechCall {
  text: string;
  voice: VoiceName;
  /** The language the text is read in (two letters). */
  language: string;
}

/** The picture sizes a client may ask for. */
export type ImageSize = "1024x1024" | "1024x1536" | "1536x1024";

/** A validated image request for one picture, as the adapters receive it. */
export interface ImageCall {
  /** The catalogue id (`z-image-turbo`); adapters send the machine's upstream name. */
  model: string;
  prompt: string;
  size: ImageSize;
  /** Same prompt and seed give the same picture; absent: the engine chooses. */
  seed?: number;
}

/** One picture as an engine made it, before Zona marks it (PNG, JPEG or WebP). */
export interface GeneratedImage {
  data: Buffer;
  /** The type detected from the content (`image/png`, `image/jpeg`, `image/webp`). */
  mime: string;
}

/** The clip sizes a client may ask for. */
export type VideoSize = "1280x704" | "704x1280";

/** A validated video request, as the adapters receive it. */
export interface VideoCall {
  /** The catalogue id (`wan-2.2-5b-fast`); adapters send the machine's upstream name. */
  model: string;
  prompt: string;
  seconds: number;
  size: VideoSize;
  /** Absent: the engine chooses. */
  seed?: number;
  /** Frames per second of the clip (24). */
  fps: number;
}

/** A video job as an engine reports it, in the four states of the OpenAI Videos API. */
export interface EngineVideoJob {
  /** The engine's id of the job. */
  id: string;
  status: "queued" | "in_progress" | "completed" | "failed";
  /** Percent done (0 to 100); null when the engine does not say. */
  progress: number | null;
  /** Why a failed job failed, as the engine says it; null otherwise. */
  error: string | null;
}

/** What a content check (moderation server) decided about a text. */
export interface ModerationVerdict {
  flagged: boolean;
  /** The categories the server flagged, when it names them. */
  categories: string[];
}

/** How an upstream call failed; `beforeFirstByte` failures can move to the next machine. */
export type UpstreamFailure = "connect" | "timeout" | "status" | "protocol" | "aborted";

/**
 * What a log may say of an engine's words quoted in an UpstreamError's message: engines repeat the
 * request in their errors (vLLM's validation errors quote the input), so logs never carry the words.
 */
export interface EngineWords {
  /** The message without the engine's words: Zona's own. */
  reason: string;
  /** The engine's error type and code, when they are short identifiers. */
  type?: string;
  code?: string;
  /** The length of the engine's message. */
  messageChars: number;
}

/**
 * A failure of an upstream server, typed so the router can decide on failover and circuit breaking.
 * `engine` is set when the message quotes the engine (see engine-words.ts).
 */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  readonly kind: UpstreamFailure;
  /** The upstream HTTP status, for `status` failures. */
  readonly status: number | undefined;
  /** Whether another machine (or a later retry) may succeed: connection failures, timeouts and 5xx. */
  readonly retryable: boolean;
  readonly engine: EngineWords | undefined;
  /**
   * The parsed JSON body of a `status` failure, kept only when the call asked for it (a server that
   * answers a state with an error status, such as vLLM-Omni's failed video job). Not enumerable, so
   * no log serializes it: it may repeat the request.
   */
  declare readonly answer?: unknown;
  constructor(kind: UpstreamFailure, message: string, status?: number, engine?: EngineWords) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.engine = engine;
    this.retryable =
      kind !== "aborted" && (kind !== "status" || status === undefined || status >= 500 || status === 429);
  }
}
