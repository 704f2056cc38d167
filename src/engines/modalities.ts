import type {
  ChatCall,
  ChatChunk,
  ChatCompletion,
  CompletionCall,
  EngineVideoJob,
  GeneratedImage,
  ImageCall,
  MachineConfig,
  ModerationVerdict,
  RerankScore,
  SpeechCall,
  TextChunk,
  TextCompletion,
  Transcription,
  TranscriptionCall,
  VideoCall,
} from "./types.ts";

/** Chat on a machine: an answer, or a stream of chunks. */
export interface ChatEngine {
  chat(machine: MachineConfig, call: ChatCall, signal: AbortSignal): Promise<ChatCompletion>;
  chatStream(machine: MachineConfig, call: ChatCall, signal: AbortSignal): Promise<AsyncIterable<ChatChunk>>;
}

/** Completion of a prompt (the legacy completions API). */
export interface CompletionEngine {
  complete(machine: MachineConfig, call: CompletionCall, signal: AbortSignal): Promise<TextCompletion>;
  completeStream(
    machine: MachineConfig,
    call: CompletionCall,
    signal: AbortSignal,
  ): Promise<AsyncIterable<TextChunk>>;
}

/** Vectors of texts. */
export interface EmbeddingEngine {
  embed(
    machine: MachineConfig,
    model: string,
    texts: string[],
    signal: AbortSignal,
  ): Promise<{ vectors: number[][]; promptTokens: number | null }>;
}

/** Scores of documents against a query. */
export interface RerankEngine {
  rerank(
    machine: MachineConfig,
    model: string,
    query: string,
    documents: string[],
    signal: AbortSignal,
  ): Promise<RerankScore[]>;
}

/** Speech to text. */
export interface TranscriptionEngine {
  /** Transcribes an audio file (the server is asked for segments with their confidences). */
  transcribe(machine: MachineConfig, call: TranscriptionCall, signal: AbortSignal): Promise<Transcription>;
}

/** Text to speech. */
export interface SpeechEngine {
  /** Reads a text aloud; resolves with a complete WAV file (16-bit PCM) as the engine made it. */
  speak(machine: MachineConfig, call: SpeechCall, signal: AbortSignal): Promise<Buffer>;
}

/** The content check of texts. */
export interface ModerationEngine {
  /** Checks a text against the content policy. */
  moderate(machine: MachineConfig, input: string, signal: AbortSignal): Promise<ModerationVerdict>;
}

/** The content check of pictures. */
export interface ImageModerationEngine {
  /** Checks a picture (a PNG) against the content policy. */
  moderateImage(machine: MachineConfig, png: Buffer, signal: AbortSignal): Promise<ModerationVerdict>;
}

/** Pictures from a prompt. */
export interface ImageEngine {
  /** Makes one picture. */
  generateImage(machine: MachineConfig, call: ImageCall, signal: AbortSignal): Promise<GeneratedImage>;
}

/** Video jobs on the engine. */
export interface VideoEngine {
  /** Starts a video job on the engine; resolves with the job as queued (or further). */
  createVideo(machine: MachineConfig, call: VideoCall, signal: AbortSignal): Promise<EngineVideoJob>;
  /** Looks at a video job once. */
  videoJob(machine: MachineConfig, engineJobId: string, signal: AbortSignal): Promise<EngineVideoJob>;
  /** Downloads a completed job's clip (an MP4). */
  videoContent(machine: MachineConfig, engineJobId: string, signal: AbortSignal): Promise<Buffer>;
  /** Cancels or deletes a video job and its clip; a job the engine no longer knows is not an error. */
  deleteVideo(machine: MachineConfig, engineJobId: string, signal: AbortSignal): Promise<void>;
}

/** Every kind of work a machine may be asked for, by name: one small interface each. */
export interface Modalities {
  chat: ChatEngine;
  completion: CompletionEngine;
  embeddings: EmbeddingEngine;
  rerank: RerankEngine;
  transcription: TranscriptionEngine;
  speech: SpeechEngine;
  moderation: ModerationEngine;
  imageModeration: ImageModerationEngine;
  images: ImageEngine;
  videos: VideoEngine;
}

/** The name of a kind of work. */
export type Modality = keyof Modalities;

/** A machine's protocol name. */
export type Protocol = MachineConfig["protocol"];

/**
 * The work the servers of each protocol can do: a machine is a candidate for that work only
 * (`EngineRegistry.candidates`), and its protocol's adapter has an engine for each, and no other
 * (`ProtocolAdapter`).
 */
export const PROTOCOL_MODALITIES = {
  openai: ["chat", "completion", "embeddings", "rerank"],
  ollama: ["chat", "completion", "embeddings"],
  tei: ["embeddings", "rerank"],
  whisper: ["transcription"],
  piper: ["speech"],
  espeak: ["speech"],
  moderation: ["moderation", "imageModeration"],
  images: ["images"],
  comfyui: ["images"],
  videos: ["videos"],
} as const satisfies Record<Protocol, readonly Modality[]>;

/** The adapter of a protocol: the engines of the modalities its servers offer, keyed by modality. */
export type ProtocolAdapter<P extends Protocol> = Pick<Modalities, (typeof PROTOCOL_MODALITIES)[P][number]>;

/** Whether the servers of a protocol can do a kind of work. */
export function protocolOffers(protocol: Protocol, modality: Modality): boolean {
  return (PROTOCOL_MODALITIES[protocol] as readonly Modality[]).includes(modality);
}

/**
 * One upstream protocol: the modalities its servers offer, each by its engine (a protocol offers a
 * modality when it has that key). An adapter only translates between the internal (OpenAI) shapes
 * above and what its servers speak; it never sees the client's reply. A streaming method resolves
 * once the upstream has accepted the request (status and headers received) and rejects with an
 * UpstreamError before that, so the router can still fail over; errors while iterating are thrown
 * from the iterator. Every method honours `signal` (the client went away, or a timeout).
 */
export type EngineAdapter = Partial<Modalities>;

/** The protocol's engine of a modality, or undefined when its servers cannot do that work. */
export function offered<K extends Modality>(
  adapter: EngineAdapter | undefined,
  modality: K,
): Modalities[K] | undefined {
  return adapter?.[modality];
}
