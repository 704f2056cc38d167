import type { UpstreamClient } from "../http/upstream-client.ts";
import { openAiPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { type MachineConfig, UpstreamError } from "../types.ts";
import { expectMp4, failedVideoJob, fromVideoJob, videoForm } from "./videos-transforms.ts";

/** The default time one call to a video server (create, look, download, delete) may take. */
export const DEFAULT_VIDEO_REQUEST_TIMEOUT_MS = 60_000;

/** The largest clip downloaded (a 5-second 720p clip is a few MB). */
export const VIDEO_CLIP_LIMIT = 256 * 1024 * 1024;

/** How the videos adapter waits. */
export interface VideoAdapterOptions {
  /**
   * How long one call may wait for its answer. A job itself runs for minutes, but each call is
   * short: the server answers a create at once with a queued job, and the caller polls.
   */
  requestTimeoutMs?: number;
}

/**
 * The adapter for OpenAI-style asynchronous video servers (vLLM-Omni, SGLang diffusion):
 * `POST /v1/videos` (a form: see videos-transforms.ts), `GET /v1/videos/{id}`,
 * `GET /v1/videos/{id}/content` (an MP4, checked), `DELETE /v1/videos/{id}`. A look answered with
 * an error status and a failed job record (vLLM-Omni's way) is that failed job, not a failure of
 * the machine. Waiting for the job
 * (poll interval, overall timeout, the machine's capacity) is the caller's.
 */
export function createVideosAdapter(
  client: UpstreamClient,
  options: VideoAdapterOptions = {},
): ProtocolAdapter<"videos"> {
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_VIDEO_REQUEST_TIMEOUT_MS;
  const jobPath = (machine: MachineConfig, id: string) =>
    openAiPath(machine, `/videos/${encodeURIComponent(id)}`);
  return {
    videos: {
      async createVideo(machine, call, signal) {
        const raw = await client.upload({
          machine,
          path: openAiPath(machine, "/videos"),
          fields: videoForm(machine, call),
          signal,
          headersTimeoutMs: timeoutMs,
        });
        return fromVideoJob(raw);
      },

      async videoJob(machine, engineJobId, signal) {
        let raw: unknown;
        try {
          raw = await client.json({
            machine,
            path: jobPath(machine, engineJobId),
            signal,
            headersTimeoutMs: timeoutMs,
            keepErrorAnswer: true,
          });
        } catch (error) {
          // vLLM-Omni's failed job comes with an error status: the machine answered, the job failed.
          const failed = failedVideoJob(error, engineJobId);
          if (failed !== undefined) return failed;
          throw error;
        }
        return fromVideoJob(raw, engineJobId);
      },

      async videoContent(machine, engineJobId, signal) {
        const clip = await client.binary(
          {
            machine,
            path: `${jobPath(machine, engineJobId)}/content`,
            signal,
            headersTimeoutMs: timeoutMs,
            bodyTimeoutMs: timeoutMs,
          },
          "video/mp4",
          VIDEO_CLIP_LIMIT,
        );
        return expectMp4(clip.body);
      },

      async deleteVideo(machine, engineJobId, signal) {
        try {
          await client.binary(
            {
              machine,
              path: jobPath(machine, engineJobId),
              method: "DELETE",
              signal,
              headersTimeoutMs: timeoutMs,
            },
            "application/json",
          );
        } catch (error) {
          // Already gone (deleted before, or forgotten by a restarted server): what was wanted.
          if (error instanceof UpstreamError && error.kind === "status" && error.status === 404) return;
          throw error;
        }
      },
    },
  };
}
