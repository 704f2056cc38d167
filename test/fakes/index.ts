/**
 * Fake engines for tests and benchmarks: real HTTP servers on 127.0.0.1 speaking the upstream
 * protocols (vLLM-style OpenAI, Ollama, text-embeddings-inference, OpenAI-style transcription
 * (speaches / whisper.cpp), Piper, OpenAI-style moderation, OpenAI-style images, ComfyUI,
 * OpenAI-style asynchronous videos).
 *
 *   const fake = new FakeOpenAiServer({ chunks: 64, chunkDelayMs: 20 });
 *   const { url, close } = await fake.start();
 *   await fake.setMode("error500");   // normal | refuse | error500 | hang | slow | dropMidStream | errorMidStream
 *   fake.configure({ errorStatus: 429 });
 *   fake.configure({ errorStatus: 400, errorEcho: "json" });  // errors that repeat the request ("text": plain text)
 *   fake.requests / fake.lastRequest / fake.requestsTo("/v1/chat/completions")
 *   const machine = fakeMachine("openai", url, { name: "gpu-1", zone: "ch" });
 *
 *   const whisper = new FakeWhisperServer({ languageAsName: true });  // or style: "whisper.cpp"
 *   whisper.setTranscript({ text: "Grazie.", segments: [{ start: 0, end: 1, text: " Grazie.", no_speech_prob: 0.9 }] });
 *   whisper.configure({ refuseStatus: 400 });  whisper.lastUpload.fields / .files[0].size
 *   new FakePiperServer({ models: ["it_IT-paola-medium"] }).voicesAsked / .voicesRead;  (api: "root" for piper-tts < 1.5)
 *   new FakeModerationServer({ flagWord: "forbidden", flagImage: (png) => fakePictureMark(png)?.seed === 7 });
 *   const images = new FakeImagesServer({ answer: "url" });  // b64_json | url | jpeg | garbage | empty
 *   images.generations  // [{model, prompt, size, seed, seedAsked}]
 *   const comfy = new FakeComfyUiServer({ historyDelayMs: 300 });  // failRun, nodeErrors
 *   comfy.workflows / comfy.cancelled;  fakeComfyWorkflow() + FAKE_COMFY_INPUTS for a machine
 *   const videos = new FakeVideosServer({ jobMs: 300, clip });  // failMidJob, garbageContent, statusWords,
 *     // failedStatus (a failed job looked at answers that status with the job: vLLM-Omni), statusUnavailable
 *   videos.jobs  // [{model, prompt, size, seconds, fps, frames, seed, form}]; videos.deletions
 *   Pictures (fake-picture.ts) are deterministic PNGs with a `zona-fake` tEXt chunk {prompt_hash, seed}.
 *   `models` on any fake: the names it serves (listed at /v1/models, /api/tags, /info, /voices);
 *   another name is refused the way the real server refuses it. Unset: any name is accepted.
 */
export { type ToneOptions, toneWav, wavInfo } from "./fake-audio.ts";
export {
  DEFAULT_COMFYUI_SETTINGS,
  FAKE_COMFY_INPUTS,
  FakeComfyUiServer,
  type FakeComfyUiSettings,
  fakeComfyWorkflow,
} from "./fake-comfyui-server.ts";
export type { FakeErrorEcho } from "./fake-echo.ts";
export { base64Vector, fakeEmbedding, generate, wordOverlap } from "./fake-generation.ts";
export {
  DEFAULT_IMAGES_SETTINGS,
  type FakeGeneration,
  type FakeImagesAnswer,
  FakeImagesServer,
  type FakeImagesSettings,
} from "./fake-images-server.ts";
export { fakeMachine } from "./fake-machine.ts";
export {
  DEFAULT_MODERATION_SETTINGS,
  FakeModerationServer,
  type FakeModerationSettings,
} from "./fake-moderation-server.ts";
export {
  type FakeMultipart,
  type FakeUploadedFile,
  formValues,
  isMultipart,
} from "./fake-multipart.ts";
export { FakeOllamaServer } from "./fake-ollama-server.ts";
export { FakeOpenAiServer } from "./fake-openai-server.ts";
export {
  type FakePictureMark,
  type FakePictureRequest,
  fakePicture,
  fakePictureMark,
  promptHash,
  readPngText,
  withPngText,
} from "./fake-picture.ts";
export {
  DEFAULT_PIPER_SETTINGS,
  FAKE_PIPER_SAMPLE_RATE,
  FAKE_PIPER_SECONDS_PER_CHARACTER,
  FakePiperServer,
  type FakePiperSettings,
} from "./fake-piper-server.ts";
export {
  DEFAULT_FAKE_SETTINGS,
  type FakeMode,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
  type StartedFake,
} from "./fake-server.ts";
export { FakeTeiServer } from "./fake-tei-server.ts";
export {
  DEFAULT_VIDEOS_SETTINGS,
  type FakeVideoJob,
  FakeVideosServer,
  type FakeVideosSettings,
} from "./fake-videos-server.ts";
export {
  DEFAULT_WHISPER_SETTINGS,
  type FakeTranscript,
  type FakeTranscriptSegment,
  type FakeTranscriptWord,
  FakeWhisperServer,
  type FakeWhisperSettings,
} from "./fake-whisper-server.ts";
