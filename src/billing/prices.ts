import type { Config, TierName } from "../config/schema.ts";
import { MICROS_PER_UNIT } from "./money.ts";

/**
 * What work costs, in micro-units, from the configured prices: tokens times the tier's multiplier
 * for text, embeddings and rerank; seconds of audio; characters of speech; pictures; seconds of video.
 */
export class PriceList {
  private readonly config: Config;
  constructor(config: Config) {
    this.config = config;
  }

  /** Input and output tokens of a model at a tier. A model not in the catalogue costs nothing. */
  tokens(modelId: string, tier: TierName, inputTokens: number, outputTokens: number): number {
    const model = this.config.models.find((m) => m.id === modelId);
    if (!model) return 0;
    // A price per million tokens in units is, per token, the same number in micro-units.
    const perTier =
      inputTokens * model.prices.input_per_million_tokens +
      outputTokens * model.prices.output_per_million_tokens;
    return Math.round(perTier * this.config.tiers[tier].multiplier);
  }

  transcription(seconds: number): number {
    return Math.round(Math.ceil(seconds) * this.config.prices.transcription_per_second * MICROS_PER_UNIT);
  }

  speech(characters: number): number {
    return Math.round(characters * this.config.prices.speech_per_character * MICROS_PER_UNIT);
  }

  images(pictures: number): number {
    return Math.round(pictures * this.config.prices.image_per_picture * MICROS_PER_UNIT);
  }

  video(seconds: number): number {
    return Math.round(seconds * this.config.prices.video_per_second * MICROS_PER_UNIT);
  }
}
