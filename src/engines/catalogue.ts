import type { Config, ModelConfig } from "../config/schema.ts";

// `tts-1-hd` is accepted wherever a speech model is named but never listed.
const UNLISTED = new Set(["tts-1-hd"]);

/** The models `GET /v1/models` shows, in catalogue order (the content checks' models are Zona's own). */
export function listedModels(config: Config): ModelConfig[] {
  return config.models.filter((model) => !UNLISTED.has(model.id) && model.kind !== "moderation");
}

/** The model catalogue of the configuration, looked up by id. */
export class Catalogue {
  private readonly byId: Map<string, ModelConfig>;
  constructor(config: Config) {
    this.byId = new Map(config.models.map((model) => [model.id, model]));
  }

  /** The model, if the catalogue has it. */
  find(id: string): ModelConfig | undefined {
    return this.byId.get(id);
  }

  /** Every model of a kind, in catalogue order. */
  ofKind(kind: ModelConfig["kind"]): ModelConfig[] {
    return [...this.byId.values()].filter((model) => model.kind === kind);
  }

  /** The first model of a kind (embeddings and rerank always use the one their kind has). */
  firstOfKind(kind: ModelConfig["kind"]): ModelConfig | undefined {
    for (const model of this.byId.values()) if (model.kind === kind) return model;
    return undefined;
  }
}
