/**
 * The errors of the media endpoints (transcription, speech, images): the same catalogue as
 * catalogue.ts, one family per file so each stays readable.
 */
import { ApiError } from "./catalogue.ts";

/** 400: the uploaded audio is not in an accepted format (detected from its content). */
export function unsupportedAudioFormat(detected: string, accepted: readonly string[]): ApiError {
  return new ApiError({
    status: 400,
    message: `The file's content is ${detected}, which is not an accepted audio format. Accepted formats: ${accepted.join(", ")}.`,
    code: "invalid_file_format",
    param: "file",
  });
}

/**
 * 400: the audio file is over 25 MB. From 25,600 kilobytes on the message states the size and the
 * limit; just above 25 MB it only says the file is too large.
 */
export function audioFileTooLarge(sizeBytes: number): ApiError {
  const kilobytes = Math.ceil(sizeBytes / 1024);
  const message =
    kilobytes > 25_600
      ? `The audio file has ${kilobytes.toLocaleString("en-US")} kilobytes, over the limit of 25 MB (25,600 kilobytes). Send a smaller or more compressed file, or parts of it.`
      : "The audio file is too large. Send a smaller or more compressed file, or parts of it.";
  return new ApiError({ status: 400, message, code: "file_too_large", param: "file" });
}

/** 400: an upload that could not be taken (over 50 MB, cut off, or not a readable form). */
export function uploadFailed(param = "file"): ApiError {
  return new ApiError({ status: 400, message: "The upload failed.", code: "upload_failed", param });
}

/** 504: a transcription still running after the time limit; the body is an HTML page. */
export function transcriptionTimeout(): ApiError {
  return new ApiError({ status: 504, message: "Gateway Timeout", shape: "html", retryable: true });
}

/** 400: the content check refused the text to read; nothing was read. */
export function inputRefused(param = "input"): ApiError {
  return new ApiError({
    status: 400,
    message: "The text was refused by the content policy and was not read.",
    code: "input_refused",
    param,
  });
}

/** 503: the content check did not answer; nothing was read (or made: `outcome` says which). */
export function moderationUnavailable(outcome = "nothing was read"): ApiError {
  return new ApiError({
    status: 503,
    message: `The content check is not available at the moment; ${outcome}. Try again in a minute.`,
    type: "server_error",
    code: "moderation_unavailable",
    retryable: true,
  });
}

/** 400: a voice that is neither one of the own voices nor a known third-party name. */
export function unknownVoice(voice: string, valid: readonly string[], param = "voice"): ApiError {
  const shown = voice.length > 64 ? `${voice.slice(0, 64)}...` : voice;
  return new ApiError({
    status: 400,
    message: `Unknown voice '${shown}'. Valid voices: ${valid.join(", ")}.`,
    code: "invalid_voice",
    param,
  });
}

/** 400 of the image endpoint: the model is not an image model of the catalogue. */
export function imageModelNotFound(id: string): ApiError {
  const shown = id.length > 128 ? `${id.slice(0, 128)}...` : id;
  return new ApiError({
    status: 400,
    message: `The model '${shown}' does not exist or does not make pictures. GET /v1/models lists the models served here.`,
    code: "model_not_found",
    param: "model",
  });
}

/** 503: no machine makes the model in the zones the request may use (images, video). */
export function noEngineAvailable(model: string): ApiError {
  return new ApiError({
    status: 503,
    message: `No machine makes ${model} for this key now. Try again later.`,
    type: "server_error",
    code: "no_engine_available",
    retryable: true,
  });
}

/** 502: no machine could make the picture (each one tried failed); nothing was charged. */
export function engineError(): ApiError {
  return new ApiError({
    status: 502,
    message: "The machine could not make the picture. Nothing was charged; try again with growing pauses.",
    type: "server_error",
    code: "engine_error",
    retryable: true,
  });
}

/** 400: the content check refused the prompt; nothing was made. `reasons` are the flagged categories. */
export function promptRefused(reasons: readonly string[], outcome = "no picture was made"): ApiError {
  const why = reasons.length > 0 ? ` (${reasons.join(", ")})` : "";
  return new ApiError({
    status: 400,
    message: `The prompt was refused by the content policy${why}; ${outcome}.`,
    code: "prompt_refused",
    param: "prompt",
  });
}

/** 400: every picture made failed the content check afterwards; none was delivered or charged. */
export function outputRefused(): ApiError {
  return new ApiError({
    status: 400,
    message:
      "The pictures made were refused by the content policy and were not delivered. Nothing was charged.",
    code: "output_refused",
  });
}

/** 403: an image link whose path, expiry or signature is not one the service signed. */
export function invalidImageLink(): ApiError {
  return new ApiError({
    status: 403,
    message: "This image link is not valid: its signature does not match.",
    code: "invalid_signature",
  });
}

/** 410: an image link past its expiry; the picture is deleted. */
export function imageLinkExpired(): ApiError {
  return new ApiError({
    status: 410,
    message: "This image link has expired and the picture was deleted. Image links last 24 hours.",
    code: "link_expired",
  });
}
