import type { TextKey } from "../i18n/i18n.ts";

// Opus in WebM (Chromium, Firefox), in Ogg (older Firefox), AAC in MP4 (Safari): formats Zona reads.
const MIME_TYPES = [
  "audio/webm;codecs=opus",
  "audio/webm",
  "audio/ogg;codecs=opus",
  "audio/ogg",
  "audio/mp4",
];

/** Why recording could not start, as the text that says so. */
export class RecorderError extends Error {
  readonly text: TextKey;

  constructor(text: TextKey) {
    super(text);
    this.text = text;
  }
}

function supportedMimeType(): string | undefined {
  return MIME_TYPES.find((type) => MediaRecorder.isTypeSupported(type));
}

function microphoneProblem(error: unknown): TextKey {
  const name = error instanceof DOMException ? error.name : "";
  if (name === "NotAllowedError" || name === "SecurityError") return "audio.error.permission";
  if (name === "NotFoundError" || name === "OverconstrainedError") return "audio.error.noMicrophone";
  if (error instanceof TypeError) return "audio.error.unsupported";
  return "audio.error.microphoneBusy";
}

/** The file name of a recording, with the extension of its container. */
export function recordingFileName(mimeType: string): string {
  if (mimeType.includes("ogg")) return "dictation.ogg";
  if (mimeType.includes("mp4")) return "dictation.m4a";
  return "dictation.webm";
}

/** One recording from the microphone; the microphone is released when it stops or is discarded. */
export class Recording {
  readonly startedAt = Date.now();
  private readonly chunks: Blob[] = [];
  private readonly stream: MediaStream;
  private readonly recorder: MediaRecorder;
  private readonly stopped: Promise<void>;

  private constructor(stream: MediaStream, recorder: MediaRecorder) {
    this.stream = stream;
    this.recorder = recorder;
    recorder.addEventListener("dataavailable", (event) => {
      if (event.data.size > 0) this.chunks.push(event.data);
    });
    this.stopped = new Promise((resolve) => {
      recorder.addEventListener("stop", () => resolve(), { once: true });
      recorder.addEventListener("error", () => resolve(), { once: true });
    });
  }

  /** Asks for the microphone and starts recording; throws a RecorderError saying what went wrong. */
  static async start(): Promise<Recording> {
    if (typeof MediaRecorder === "undefined" || !navigator.mediaDevices?.getUserMedia) {
      throw new RecorderError("audio.error.unsupported");
    }
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: true, noiseSuppression: true, channelCount: 1 },
      });
    } catch (error) {
      throw new RecorderError(microphoneProblem(error));
    }
    try {
      const mimeType = supportedMimeType();
      const recorder = new MediaRecorder(stream, mimeType ? { mimeType } : {});
      const recording = new Recording(stream, recorder);
      // Pieces every second, so a long recording is not one buffer handed over at the end.
      recorder.start(1000);
      return recording;
    } catch {
      stopTracks(stream);
      throw new RecorderError("audio.error.unsupported");
    }
  }

  /** The container and codec actually recorded. */
  get mimeType(): string {
    return this.recorder.mimeType || supportedMimeType() || "audio/webm";
  }

  /** Stops, releases the microphone and returns what was recorded. */
  async stop(): Promise<Blob> {
    if (this.recorder.state !== "inactive") this.recorder.stop();
    await this.stopped;
    stopTracks(this.stream);
    return new Blob(this.chunks, { type: this.mimeType.split(";")[0] ?? "audio/webm" });
  }

  /** Stops and forgets the recording. */
  discard(): void {
    try {
      if (this.recorder.state !== "inactive") this.recorder.stop();
    } catch {
      // Already stopped.
    }
    stopTracks(this.stream);
    this.chunks.length = 0;
  }
}

function stopTracks(stream: MediaStream): void {
  for (const track of stream.getTracks()) track.stop();
}
