import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { FakeModerationServer, FakePiperServer, FakeWhisperServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import type { STORE_KINDS } from "../helpers/test-store.ts";

/** The audio tests' installation: two zones, a fallback zone ("Switzerland") and fake engines. */
export interface AudioStack {
  t: TestApp;
  key: string;
  keyId: string;
  /** The transcription machine of zone ch-ti. */
  zoneWhisper: FakeWhisperServer;
  /** The fallback server (zone ch-fallback), serving asr-1 and asr-1-hd. */
  fallbackWhisper: FakeWhisperServer;
  piper: FakePiperServer;
  moderation: FakeModerationServer;
  /** POSTs a multipart form to /v1/audio/transcriptions with the key. */
  transcribe(
    file: Blob | Buffer | undefined,
    fields?: Record<string, string | string[]>,
    filename?: string,
  ): Promise<Answer>;
  /** POSTs JSON to /v1/audio/speech with the key. */
  speak(body: unknown): Promise<Answer>;
  /** The usage records of the key. */
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  usage(): Promise<any[]>;
  close(): Promise<void>;
}

/** An answer of the app, read whole. */
export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  body: any;
  text: string;
  bytes: Buffer;
}

/** Prices of the stack: 0.001 per second of audio, 0.0001 per character (1,000 and 100 micro-units). */
export const TRANSCRIPTION_MICROS_PER_SECOND = 1000;
export const SPEECH_MICROS_PER_CHARACTER = 100;

const FIXTURES = join(import.meta.dirname, "../fixtures/audio");

/** A committed audio fixture. */
export function fixture(name: string): Promise<Buffer> {
  return readFile(join(FIXTURES, name));
}

export async function startAudioStack(
  options: {
    store?: (typeof STORE_KINDS)[number];
    config?: Record<string, unknown>;
    /** Leave the fallback zone without a moderation machine. */
    withoutModeration?: boolean;
    /** `installation.content_checks`. */
    contentChecks?: Record<string, string>;
    /** An installation without zones: only the fallback zone and its machines. */
    zoneless?: boolean;
  } = {},
): Promise<AudioStack> {
  const zoneWhisper = new FakeWhisperServer();
  const fallbackWhisper = new FakeWhisperServer();
  const piper = new FakePiperServer();
  const moderation = new FakeModerationServer();
  const [zone, fallback, p, m] = await Promise.all([
    zoneWhisper.start(),
    fallbackWhisper.start(),
    piper.start(),
    moderation.start(),
  ]);
  const t = await startTestApp({
    ...(options.store ? { store: options.store } : {}),
    config: {
      installation: {
        zones: options.zoneless ? [] : [{ id: "ch-ti" }, { id: "ch-zh" }],
        fallback_zone: "ch-fallback",
        ...(options.contentChecks ? { content_checks: options.contentChecks } : {}),
      },
      tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
      rate_limits: { endpoint_limits: { audio_transcriptions: 100_000, audio_speech: 100_000 } },
      prices: { transcription_per_second: 0.001, speech_per_character: 0.0001 },
      models: [
        { id: "asr-1", kind: "asr" },
        { id: "asr-1-hd", kind: "asr" },
        { id: "tts-1", kind: "tts" },
      ],
      machines: [
        ...(options.zoneless
          ? []
          : [{ name: "ti-whisper", zone: "ch-ti", protocol: "whisper", url: zone.url, models: ["asr-1"] }]),
        {
          name: "ch-whisper",
          zone: "ch-fallback",
          protocol: "whisper",
          url: fallback.url,
          models: ["asr-1", "asr-1-hd"],
        },
        { name: "ch-piper", zone: "ch-fallback", protocol: "piper", url: p.url, models: ["tts-1"] },
        ...(options.withoutModeration
          ? []
          : [{ name: "ch-moderation", zone: "ch-fallback", protocol: "moderation", url: m.url }]),
      ],
      ...options.config,
    },
  });
  const { key, keyId } = await t.newKey();

  const read = async (response: Response): Promise<Answer> => {
    const bytes = Buffer.from(await response.arrayBuffer());
    const text = bytes.toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: response.status, headers: response.headers, body, text, bytes };
  };

  return {
    t,
    key,
    keyId,
    zoneWhisper,
    fallbackWhisper,
    piper,
    moderation,
    async transcribe(file, fields = {}, filename = "audio.bin") {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) {
        for (const one of Array.isArray(value) ? value : [value]) form.append(name, one);
      }
      if (file !== undefined) {
        const blob = file instanceof Blob ? file : new Blob([new Uint8Array(file)]);
        form.append("file", blob, filename);
      }
      return read(
        await t.fetch("/v1/audio/transcriptions", {
          method: "POST",
          headers: { authorization: `Bearer ${key}` },
          body: form,
        }),
      );
    },
    async speak(body) {
      return read(
        await t.fetch("/v1/audio/speech", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    },
    async usage() {
      // Usage records are written just after the answer.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const answer = await t.admin("GET", `/usage?key_id=${keyId}`);
      return answer.body?.data ?? [];
    },
    async close() {
      await t.close();
      await Promise.all([zone.close(), fallback.close(), p.close(), m.close()]);
    },
  };
}
