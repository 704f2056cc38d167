import type { ImageSize } from "../../engines/types.ts";

/** A validated `POST /v1/images/generations` body. */
export interface ImageRequest {
  prompt: string;
  /** Absent: the catalogue's first image model. */
  model?: string;
  size: ImageSize;
  n: number;
  responseFormat: "b64_json" | "url";
  seed?: number;
}
