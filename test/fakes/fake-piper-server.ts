import { toneWav } from "./fake-audio.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
  takeKnobs,
} from "./fake-server.ts";

/** Seconds of audio per character of text (about the pace of speech). */
export const FAKE_PIPER_SECONDS_PER_CHARACTER = 0.06;
/** The sample rate of the fake's WAV files (Piper's medium voices). */
export const FAKE_PIPER_SAMPLE_RATE = 22_050;

/** Knobs of the Piper fake. */
export interface FakePiperSettings {
  /**
   * `synthesize`: piper-tts 1.5 and later (`POST /synthesize`, `GET /` is a web page);
   * `root`: piper-tts 1.3 and 1.4 (`POST /`, no `/synthesize`).
   */
  api: "synthesize" | "root";
}

/** The defaults of the Piper knobs. */
export const DEFAULT_PIPER_SETTINGS: FakePiperSettings = { api: "synthesize" };
const PIPER_KEYS = Object.keys(DEFAULT_PIPER_SETTINGS) as Array<keyof FakePiperSettings>;

function text(status: number, message: string): FakeReply {
  return { type: "binary", status, contentType: "text/html; charset=utf-8", body: Buffer.from(message) };
}

function piperProtocol(voicesAsked: string[], voicesRead: string[], knobs: FakePiperSettings): FakeProtocol {
  const synthesisPath = () => (knobs.api === "synthesize" ? "/synthesize" : "/");
  return {
    // Flask answers errors as HTML pages.
    errorBody: (status, message) => `<h1>${status}</h1><p>${message}</p>`,
    handle(request: FakeRequest, settings: FakeSettings): FakeReply {
      const { method, path } = request;
      if (method === "GET" && path === "/voices") {
        // The voice models downloaded, each with its config (here only its name).
        const voices = settings.models ?? [];
        return {
          type: "json",
          status: 200,
          body: Object.fromEntries(voices.map((voice) => [voice, { dataset: voice }])),
        };
      }
      if (knobs.api === "synthesize" && path === "/") {
        return method === "GET" ? text(200, "<html>Piper</html>") : text(405, "<h1>Method Not Allowed</h1>");
      }
      if (path !== synthesisPath()) return text(404, "<h1>Not Found</h1>");
      if (method !== "POST") return text(405, "<h1>Method Not Allowed</h1>");
      const body = request.body;
      const input = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
      if (typeof input.text !== "string" || input.text.trim().length === 0) {
        return text(400, "No text provided");
      }
      const voice = typeof input.voice === "string" ? input.voice : "default";
      voicesAsked.push(voice);
      // As piper1-gpl does, a voice model that is not downloaded is read by the default one (the
      // first of `models`, the `-m` the server was started with).
      const downloaded = settings.models;
      voicesRead.push(
        downloaded === undefined || downloaded.includes(voice) ? voice : (downloaded[0] ?? voice),
      );
      const seconds = Math.max(0.1, input.text.length * FAKE_PIPER_SECONDS_PER_CHARACTER);
      return {
        type: "binary",
        status: 200,
        contentType: "audio/wav",
        body: toneWav({ seconds, sampleRate: FAKE_PIPER_SAMPLE_RATE }),
      };
    },
  };
}

/**
 * A fake Piper HTTP server (piper1-gpl `python3 -m piper.http_server`): `POST /synthesize` (or `/`
 * with `api: "root"`) with `{text, voice}` answers a 16-bit PCM mono WAV of a 440 Hz tone, 0.06 s
 * per character; `GET /voices` lists `models`, the voice models downloaded. A voice model that is
 * not among them is read by the first one, with no error, as the real server does.
 */
export class FakePiperServer extends FakeServer {
  /** The voice model of every synthesis asked, in order ("default" when none was named). */
  readonly voicesAsked: string[];
  /** The voice model that read each of them. */
  readonly voicesRead: string[];
  readonly piper: FakePiperSettings;

  constructor(settings: Partial<FakeSettings & FakePiperSettings> = {}) {
    const voicesAsked: string[] = [];
    const voicesRead: string[] = [];
    const knobs: FakePiperSettings = { ...DEFAULT_PIPER_SETTINGS };
    super(piperProtocol(voicesAsked, voicesRead, knobs), {});
    this.voicesAsked = voicesAsked;
    this.voicesRead = voicesRead;
    this.piper = knobs;
    this.configure(settings);
  }

  /** Changes settings, the base ones and the Piper knobs alike. */
  override configure(settings: Partial<FakeSettings & FakePiperSettings>): void {
    super.configure(takeKnobs(settings, this.piper, PIPER_KEYS));
  }

  override clearRequests(): void {
    super.clearRequests();
    this.voicesAsked.length = 0;
    this.voicesRead.length = 0;
  }
}
