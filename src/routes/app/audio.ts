import type { FastifyInstance } from "fastify";
import type { Config } from "../../config/schema.ts";
import { validationFailed } from "../../errors/catalogue.ts";
import { isMultipart, receiveMultipart } from "../../http/multipart-upload.ts";
import { userLimit } from "../../limits/user-limits.ts";
import { DEFAULT_VOICES, VOICES } from "../../services/audio/voices.ts";
import type { Services } from "../../services/create-services.ts";
import { checkAudioFileSize, UPLOAD_KEPT_BYTES } from "../v1/audio.ts";
import { requireUser } from "./app-user.ts";
import { userContext } from "./user-context.ts";
import { validateAppSynthesize, validateAppTranscribe } from "./validate-app-audio.ts";

/**
 * The app API's audio: the key API's transcription and speech
 * services with the app's differences: the file in `audio`, empty fields refused, no silence check,
 * no word timings, `with_segments`; speech with `text` and `format`, the account's language for the
 * default voice, `X-Voice` and `X-Duration-Seconds`; and the voices list.
 */
export async function appAudioRoutes(app: FastifyInstance, options: { config: Config; services: Services }) {
  const { services } = options;

  app.get("/audio/voices", async () => ({
    voices: VOICES.map((voice) => ({ name: voice.name, language: voice.language, gender: voice.gender })),
    defaults_by_language: { ...DEFAULT_VOICES, rm: DEFAULT_VOICES.it },
  }));

  app.post("/audio/transcribe", { config: userLimit("transcribe") }, async (request, reply) => {
    if (!isMultipart(request))
      throw validationFailed({ audio: ["Send the audio as multipart/form-data in 'audio'."] });
    const upload = await receiveMultipart(request, { fileField: "audio", maxFileBytes: UPLOAD_KEPT_BYTES });
    try {
      const fields = validateAppTranscribe(upload.fields, upload.file);
      const file = upload.file;
      if (file === undefined) throw validationFailed({ audio: ["The audio file is required."] });
      checkAudioFileSize(file, "audio");
      const outcome = await services.transcription.transcribe(
        {
          model: fields.model,
          file,
          ...(fields.language !== undefined ? { language: fields.language } : {}),
          ...(fields.prompt !== undefined ? { prompt: fields.prompt } : {}),
          words: false,
          silenceCheck: false,
        },
        userContext(request, reply, "app.audio.transcribe"),
      );
      if (outcome.zone !== null) reply.header("x-zona", outcome.zone);
      return {
        text: outcome.transcription.text,
        language: outcome.language,
        duration_seconds: outcome.durationSeconds,
        model: fields.model,
        segments: fields.withSegments
          ? outcome.transcription.segments.map((segment, index) => ({
              id: index + 1,
              start: segment.start,
              end: segment.end,
              text: segment.text,
            }))
          : [],
      };
    } finally {
      await upload.remove();
    }
  });

  app.post("/audio/synthesize", { config: userLimit("synthesize") }, async (request, reply) => {
    const valid = validateAppSynthesize(request.body, requireUser(request).language);
    const outcome = await services.speech.speak(
      valid,
      userContext(request, reply, "app.audio.synthesize"),
      "text",
    );
    return reply
      .type(outcome.contentType)
      .header("x-voice", outcome.voice)
      .header("x-duration-seconds", outcome.durationSeconds.toFixed(2))
      .send(outcome.audio);
  });
}
