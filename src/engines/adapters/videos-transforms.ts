/**
 * Pure translations for OpenAI-style asynchronous video servers (`/v1/videos`: vLLM-Omni, SGLang
 * diffusion): the create form, the job record read back in four states (also from an error answer),
 * the MP4 check.
 */
import { quotingEngine } from "../engine-words.ts";
import { upstreamModel } from "../served-models.ts";
import type { EngineVideoJob, MachineConfig, VideoCall } from "../types.ts";
import { UpstreamError } from "../types.ts";
import { expectPayload, isPayload, numberField, type Payload, stringField } from "./payload.ts";

/**
 * The frame count of a clip: Wan's VAE packs 4 frames per latent after the first, so it makes
 * 4k+1 frames; the smallest such count that fills the seconds (5 s at 24 fps: 121, Wan 2.2's own
 * default). Servers left to derive it compute seconds × fps (120), which Wan would round itself.
 */
export function videoFrameCount(seconds: number, fps: number): number {
  return 4 * Math.ceil((seconds * fps) / 4) + 1;
}

/**
 * The fields of `POST /v1/videos`, sent as multipart/form-data: vLLM-Omni reads its parameters
 * only from a form (a JSON body is refused); current SGLang reads the same form (older releases
 * wanted a reference image in a form). `fps` and `num_frames` are extensions both read top-level;
 * `seconds` is kept for servers that derive the frames themselves.
 */
export function videoForm(machine: MachineConfig, call: VideoCall): Array<[string, string]> {
  const fields: Array<[string, string]> = [
    ["model", upstreamModel(machine, call.model)],
    ["prompt", call.prompt],
    ["size", call.size],
    ["seconds", String(call.seconds)],
    ["fps", String(call.fps)],
    ["num_frames", String(videoFrameCount(call.seconds, call.fps))],
  ];
  if (call.seed !== undefined) fields.push(["seed", String(call.seed)]);
  return fields;
}

/** The engines' words for a job's state, beyond the four of the OpenAI API. */
const STATUSES: Record<string, EngineVideoJob["status"]> = {
  queued: "queued",
  pending: "queued",
  submitted: "queued",
  in_progress: "in_progress",
  "in-progress": "in_progress",
  processing: "in_progress",
  running: "in_progress",
  generating: "in_progress",
  completed: "completed",
  succeeded: "completed",
  success: "completed",
  done: "completed",
  failed: "failed",
  error: "failed",
  cancelled: "failed",
  canceled: "failed",
  deleted: "failed",
  expired: "failed",
};

/**
 * A job record (`{id, object: "video", status, progress, error}`) in the four states. Progress is
 * percent (a fraction below 1 from a server counting 0..1 is not told apart from 0.x %: both
 * vLLM-Omni and SGLang count 0..100); a completed job is at 100. An unknown state or a record
 * without an id is a `protocol` failure.
 */
export function fromVideoJob(raw: unknown, expectedId?: string): EngineVideoJob {
  const body = expectPayload(raw, "a video job");
  const id = stringField(body.id) ?? expectedId;
  if (id === undefined || id.length === 0)
    throw new UpstreamError("protocol", "the video server sent a job without an id");
  const word = stringField(body.status)?.toLowerCase();
  const status = word === undefined ? undefined : STATUSES[word];
  if (status === undefined) {
    if (word === undefined) throw new UpstreamError("protocol", "the video server sent a job with no status");
    throw quotingEngine("protocol", "the video server sent a job with an unknown status", word.slice(0, 40));
  }
  const percent = numberField(body.progress);
  const progress =
    status === "completed" ? 100 : percent === undefined ? null : Math.min(100, Math.max(0, percent));
  return { id, status, progress, error: status === "failed" ? jobError(body) : null };
}

/**
 * The failed job an error answer carries: vLLM-Omni answers the look at a failed job with an error
 * status (500, or the 4xx or 5xx of the job's own `error.code`) and the job record as its body. Only
 * a record of the job asked for, in a failed state, counts; undefined for any other failure.
 */
export function failedVideoJob(error: unknown, engineJobId: string): EngineVideoJob | undefined {
  if (!(error instanceof UpstreamError) || error.kind !== "status" || !isPayload(error.answer))
    return undefined;
  if (stringField(error.answer.id) !== engineJobId) return undefined;
  try {
    const job = fromVideoJob(error.answer, engineJobId);
    return job.status === "failed" ? job : undefined;
  } catch {
    return undefined;
  }
}

/** Why a failed job failed: OpenAI `error.message`, or a plain `error` string; a default otherwise. */
function jobError(body: Payload): string {
  const error = body.error;
  const message = isPayload(error) ? stringField(error.message) : stringField(error);
  const text = (message ?? "").replace(/\s+/g, " ").trim();
  if (text.length > 0) return text.slice(0, 500);
  return stringField(body.status) === "deleted" ? "the job was deleted" : "the engine gave no reason";
}

/** Whether bytes start like an ISO media file (MP4): a box of type `ftyp` first. */
export function isMp4(bytes: Buffer): boolean {
  if (bytes.length < 12) return false;
  const size = bytes.readUInt32BE(0);
  return bytes.toString("latin1", 4, 8) === "ftyp" && (size === 1 || size >= 8);
}

/** The bytes as a clip, or a `protocol` failure. */
export function expectMp4(bytes: Buffer): Buffer {
  if (!isMp4(bytes)) throw new UpstreamError("protocol", "the video server sent a clip that is not an MP4");
  return bytes;
}
