import { toneWav } from "./fake-audio.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
} from "./fake-server.ts";

/** Seconds of audio per character of text (about the pace of speech). */
export const FAKE_PIPER_SECONDS_PER_CHARACTER = 0.06;
/** The sample rate of the fake's WAV files (Piper's medium voices). */
export const FAKE_PIPER_SAMPLE_RATE = 22_050;

function text(status: number, message: string): FakeReply {
  return { type: "binary", status, contentType: "text/html; charset=utf-8", body: Buffer.from(message) };
}

function piperProtocol(voicesAsked: string[]): FakeProtocol {
  return {
    // Flask answers errors as HTML pages.
    errorBody: (status, message) => `<h1>${status}</h1><p>${message}</p>`,
    handle(request: FakeRequest, settings: FakeSettings): FakeReply {
      if (request.path !== "/") return text(404, "<h1>Not Found</h1>");
      if (request.method !== "POST") return text(405, "<h1>Method Not Allowed</h1>");
      const body = request.body;
      const input = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
      if (typeof input.text !== "string" || input.text.trim().length === 0) {
        return text(400, "No text provided");
      }
      const voice = typeof input.voice === "string" ? input.voice : "default";
      voicesAsked.push(voice);
      // `models` lists the voices the server has downloaded.
      if (settings.models !== undefined && !settings.models.includes(voice)) {
        return text(500, `<h1>Internal Server Error</h1><p>Voice not found: ${voice}</p>`);
      }
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
 * A fake Piper HTTP server (piper1-gpl `python3 -m piper.http_server`): `POST /` with `{text, voice}`
 * answers a 16-bit PCM mono WAV of a 440 Hz tone, 0.06 s per character; `models` (when set) lists
 * the voices it has, others fail with 500 as a missing voice file does.
 */
export class FakePiperServer extends FakeServer {
  /** The voice of every synthesis asked, in order ("default" when none was named). */
  readonly voicesAsked: string[];

  constructor(settings: Partial<FakeSettings> = {}) {
    const voicesAsked: string[] = [];
    super(piperProtocol(voicesAsked), settings);
    this.voicesAsked = voicesAsked;
  }

  override clearRequests(): void {
    super.clearRequests();
    this.voicesAsked.length = 0;
  }
}
