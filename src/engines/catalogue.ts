import type { Config, ModelConfig } from "../config/schema.ts";

// `tts-1-hd` is accepted wherever a speech model is named but never listed (spec "GET /v1/models").
const UNLISTED = new Set(["tts-1-hd"]);

/** The models `GET /v1/models` shows, in catalogue order. */
export function listedModels(config: Config): ModelConfig[] {
  return config.models.filter((model) => !UNLISTED.has(model.id));
}
