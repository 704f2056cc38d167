import { type EspeakEngine, sharedEspeakEngine } from "../espeak/espeak-engine.ts";
import type { UpstreamClient } from "../http/upstream-client.ts";
import type { EngineAdapter, Protocol, ProtocolAdapter } from "../modalities.ts";
import type { VoiceName } from "../types.ts";
import { createComfyUiAdapter } from "./comfyui-adapter.ts";
import { createEspeakAdapter } from "./espeak-adapter.ts";
import { createImagesAdapter } from "./images-adapter.ts";
import { createModerationAdapter } from "./moderation-adapter.ts";
import { createOllamaAdapter } from "./ollama-adapter.ts";
import { createOpenAiAdapter } from "./openai-adapter.ts";
import { createPiperAdapter } from "./piper-adapter.ts";
import { createTeiAdapter } from "./tei-adapter.ts";
import { createVideosAdapter } from "./videos-adapter.ts";
import { createWhisperAdapter } from "./whisper-adapter.ts";

/** Looks up the adapter of a protocol; undefined for protocols that have none (yet). */
export type AdapterLookup = (protocol: Protocol | string) => EngineAdapter | undefined;

/** What the adapters are made with besides the HTTP client. */
export interface AdapterOptions {
  /** The built-in speech engine (the process-wide one unless another is given). */
  espeak?: EspeakEngine;
  /** The Piper voice model behind each own voice (`engines.piper_voices`; default: today's models). */
  piperVoices?: Readonly<Record<VoiceName, string>>;
  /** How long one picture may take (`engines.image_timeout_seconds`; default 180 s). */
  imageTimeoutMs?: number;
  /** How long one call to a video server may take (default 60 s; the job itself is polled by its caller). */
  videoRequestTimeoutMs?: number;
}

/**
 * The adapters of every protocol that has one, all sharing one HTTP client (and its timeouts and
 * pools); `espeak` runs on the built-in engine.
 */
export function createAdapters(client: UpstreamClient, options: AdapterOptions = {}): AdapterLookup {
  const image = options.imageTimeoutMs === undefined ? {} : { imageTimeoutMs: options.imageTimeoutMs };
  // Each protocol's adapter, typed by the work its servers offer (PROTOCOL_MODALITIES).
  const adapters: { [P in Protocol]: ProtocolAdapter<P> } = {
    openai: createOpenAiAdapter(client),
    ollama: createOllamaAdapter(client),
    tei: createTeiAdapter(client),
    whisper: createWhisperAdapter(client),
    piper: createPiperAdapter(client, options.piperVoices),
    espeak: createEspeakAdapter(options.espeak ?? sharedEspeakEngine()),
    moderation: createModerationAdapter(client),
    images: createImagesAdapter(client, image),
    comfyui: createComfyUiAdapter(client, image),
    videos: createVideosAdapter(client, { requestTimeoutMs: options.videoRequestTimeoutMs }),
  };
  const byName = new Map<string, EngineAdapter>(Object.entries(adapters));
  return (protocol) => byName.get(protocol);
}
