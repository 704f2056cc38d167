import type { VideoSize } from "../../engines/types.ts";

/** A validated `POST /v1/videos` request. */
export interface VideoRequest {
  prompt: string;
  /** Absent: the catalogue's first video model. */
  model?: string;
  seconds: number;
  size: VideoSize;
  seed?: number;
}
