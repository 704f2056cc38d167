import { z } from "zod";

/** Languages the installation and accounts can speak (Romansh `rm` included). */
export const LANGUAGES = ["it", "en", "de", "fr", "rm"] as const;
/** Language codes an account may have. */
export type Language = (typeof LANGUAGES)[number];
/** Tier names, in the order of their speed. */
export const TIER_NAMES = ["slow", "medium", "fast", "ludicrous"] as const;
/** Endpoints with a per-key limit of their own; their limits may be changed. */
export const ENDPOINT_NAMES = [
  "chat_completions",
  "completions",
  "responses",
  "knowledge_base_ask",
  "embeddings",
  "rerank",
  "audio_transcriptions",
  "audio_speech",
  "image_generations",
  "video_create",
  "video_list",
  "video_retrieve",
  "video_content",
  "video_delete",
] as const;

/**
 * Kinds of model in the catalogue. A `moderation` model is the one a content-check machine is asked
 * for (its `upstream` name is sent); it is Zona's own and never listed to clients.
 */
export const MODEL_KINDS = [
  "chat",
  "embedding",
  "rerank",
  "asr",
  "tts",
  "image",
  "video",
  "moderation",
] as const;
/** Upstream protocols an engine adapter can speak. */
export const PROTOCOLS = [
  "openai",
  "ollama",
  "tei",
  "whisper",
  "piper",
  "espeak",
  "moderation",
  "images",
  "comfyui",
  "videos",
] as const;

/** A machine's, zone's or content check's name. */
export const slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "must be lower-case letters, digits, '-' or '_' (at most 63)");
