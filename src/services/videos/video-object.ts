import type { VideoJobRow } from "../../store/repositories/video-jobs.ts";

/** A video job in the shape of OpenAI's `Video` object, so that the SDKs' `videos.*` methods read it. */
export interface VideoObject {
  id: string;
  object: "video";
  status: string;
  progress: number;
  created_at: number;
  completed_at: number | null;
  expires_at: number | null;
  error: { code: string; message: string } | null;
  model: string;
  prompt: string;
  remixed_from_video_id: null;
  seconds: string;
  size: string;
}

/** The client's view of a stored job (times in Unix seconds; `seconds` a string, as OpenAI's). */
export function videoObject(row: VideoJobRow): VideoObject {
  return {
    id: row.id,
    object: "video",
    // A machine's place is taken (in_progress) while it is asked to make the job; until it has
    // accepted, the job is still waiting, and one the machine refuses goes back to the queue.
    status: row.status === "in_progress" && row.engineJobId === null ? "queued" : row.status,
    progress: row.progress,
    created_at: unixSeconds(row.createdAt),
    completed_at: row.completedAt ? unixSeconds(row.completedAt) : null,
    expires_at: row.expiresAt ? unixSeconds(row.expiresAt) : null,
    error:
      row.status === "failed"
        ? {
            code: row.errorCode ?? "engine_error",
            message: row.errorMessage ?? "The video could not be made.",
          }
        : null,
    model: row.model,
    prompt: row.prompt,
    remixed_from_video_id: null,
    seconds: String(row.clipSeconds ?? row.seconds),
    size: row.size,
  };
}

function unixSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}
