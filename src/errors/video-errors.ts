import { ApiError } from "./catalogue.ts";

/**
 * 429 `too_many_video_jobs`: the person has a job queued or in progress (one at a time per person).
 * Retrying at once cannot help, so the SDKs are told not to (`x-should-retry`).
 */
export function tooManyVideoJobs(): ApiError {
  return new ApiError({
    status: 429,
    message:
      "A video of yours is already queued or being made; one video at a time. Send the next once it has completed or failed (GET /v1/videos/{id}), or delete it.",
    code: "too_many_video_jobs",
    headers: { "x-should-retry": "false" },
  });
}

/** 404: no such video, or another person's (told apart from nothing, exactly alike). */
export function videoNotFound(): ApiError {
  return new ApiError({
    status: 404,
    message: "No video with this id exists. Videos are kept 7 days.",
    code: "not_found",
    param: "video_id",
  });
}

/** 409: the clip of a video that has not completed (yet, or ever) cannot be downloaded. */
export function videoNotReady(status: string, progress: number): ApiError {
  if (status === "failed") {
    return new ApiError({
      status: 409,
      message: "This video failed and has no content; its `error` says why. Nothing was charged.",
      code: "video_failed",
    });
  }
  return new ApiError({
    status: 409,
    message: `This video is not ready: it is ${status.replace("_", " ")} (${progress}%). Download it once its status is completed.`,
    code: "video_not_ready",
  });
}

/** 400: a model that does not exist or does not make videos. */
export function videoModelNotFound(id: string): ApiError {
  const shown = id.length > 128 ? `${id.slice(0, 128)}...` : id;
  return new ApiError({
    status: 400,
    message: `The model '${shown}' does not exist or does not make videos. GET /v1/models lists the models served here.`,
    code: "model_not_found",
    param: "model",
  });
}
