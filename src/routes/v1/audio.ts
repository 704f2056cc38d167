import type { FastifyInstance } from "fastify";
import { invalidRequest } from "../../errors/catalogue.ts";
import { audioFileTooLarge, uploadFailed } from "../../errors/media-errors.ts";
import { isMultipart, type ReceivedFile, receiveMultipart } from "../../http/multipart-upload.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import { verboseTranscription } from "../../services/audio/transcription-response.ts";
import type { Services } from "../../services/services.ts";
import { validateSpeech } from "../wire/validate-speech.ts";
import { validateTranscriptionFields } from "../wire/validate-transcription.ts";
import { generationContext } from "./text-context.ts";

/** The audio file limit: 25 MB, read as 25,000,000 bytes. */
export const AUDIO_MAX_BYTES = 25_000_000;
/** Above this the upload is not kept at all and only "the upload failed" is said. */
export const UPLOAD_KEPT_BYTES = 50 * 1024 * 1024;

/** The size rules of an audio file: cut off above 50 MB ("the upload failed"), 400 above 25 MB. */
export function checkAudioFileSize(file: ReceivedFile, param: string): void {
  if (file.truncated) throw uploadFailed(param);
  if (file.size > AUDIO_MAX_BYTES) throw audioFileTooLarge(file.size);
}

/** `POST /v1/audio/transcriptions` and `POST /v1/audio/speech` (docs/audio-api.md). */
export async function audioRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post(
    "/audio/transcriptions",
    { config: endpointLimit("audioTranscriptions") },
    async (request, reply) => {
      if (!isMultipart(request)) {
        throw invalidRequest("Send the audio as multipart/form-data with the file in the 'file' field.", {
          param: "file",
        });
      }
      const upload = await receiveMultipart(request, {
        fileField: "file",
        maxFileBytes: UPLOAD_KEPT_BYTES,
      });
      try {
        const fields = validateTranscriptionFields(upload.fields, upload.tooLong);
        const file = upload.file;
        if (file === undefined)
          throw invalidRequest("'file' is required: the audio to transcribe.", { param: "file" });
        if (file.truncated) throw uploadFailed();
        if (file.size > AUDIO_MAX_BYTES) throw audioFileTooLarge(file.size);
        if (file.size === 0) throw invalidRequest("'file' is empty.", { param: "file" });
        const { context } = generationContext(request, reply, "audio.transcriptions");
        const outcome = await services.transcription.transcribe(
          {
            model: fields.model,
            file,
            ...(fields.language !== undefined ? { language: fields.language } : {}),
            ...(fields.prompt !== undefined ? { prompt: fields.prompt } : {}),
            ...(fields.temperature !== undefined ? { temperature: fields.temperature } : {}),
            words: fields.words,
            silenceCheck: true,
          },
          context,
        );
        if (outcome.zone !== null) reply.header("x-zona", outcome.zone);
        const { transcription } = outcome;
        if (fields.responseFormat === "text") {
          return reply.type("text/plain; charset=utf-8").send(transcription.text);
        }
        if (fields.responseFormat === "json") return reply.send({ text: transcription.text });
        return reply.send(
          verboseTranscription(transcription, {
            language: outcome.language,
            duration: outcome.durationSeconds,
            zoneMachine: outcome.zone !== null,
            words: fields.words,
          }),
        );
      } finally {
        await upload.remove();
      }
    },
  );

  app.post("/audio/speech", { config: endpointLimit("audioSpeech") }, async (request, reply) => {
    const valid = validateSpeech(request.body);
    const { context } = generationContext(request, reply, "audio.speech");
    const outcome = await services.speech.speak(valid, context);
    return reply.type(outcome.contentType).send(outcome.audio);
  });
}
