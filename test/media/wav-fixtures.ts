/**
 * WAV test files built in code (none are committed): tones and noise at exact RMS levels, so the
 * silence rules can be tested at the levels the spec names. Levels are RMS in dBFS against a full
 * scale of 32768, the same measure as src/media/silence.ts.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** How samples are stored: integer PCM of 8, 16 or 24 bits, or 32-bit float. */
export interface WavLayout {
  sampleRate?: number;
  channels?: number;
  bits?: 8 | 16 | 24 | 32;
  /** 32-bit IEEE float instead of integer PCM. */
  float?: boolean;
  /** Write the fmt chunk as WAVE_FORMAT_EXTENSIBLE (sub-format GUID) as many tools do. */
  extensible?: boolean;
}

/** Samples in [-1, 1), interleaved, as a WAV file with a canonical header. */
export function encodeWav(samples: Float64Array, layout: WavLayout = {}): Buffer {
  const sampleRate = layout.sampleRate ?? 16000;
  const channels = layout.channels ?? 1;
  const bits = layout.float ? 32 : (layout.bits ?? 16);
  const bytes = bits / 8;
  const data = Buffer.alloc(samples.length * bytes);
  samples.forEach((sample, i) => {
    const at = i * bytes;
    if (layout.float) data.writeFloatLE(sample, at);
    else if (bits === 8) data.writeUInt8(clamp(Math.round(sample * 128) + 128, 0, 255), at);
    else if (bits === 16) data.writeInt16LE(clamp(Math.round(sample * 32768), -32768, 32767), at);
    else data.writeIntLE(clamp(Math.round(sample * 8388608), -8388608, 8388607), at, 3);
  });
  const tag = layout.float ? 3 : 1;
  const fmt = Buffer.alloc(layout.extensible ? 40 : 16);
  fmt.writeUInt16LE(layout.extensible ? 0xfffe : tag, 0);
  fmt.writeUInt16LE(channels, 2);
  fmt.writeUInt32LE(sampleRate, 4);
  fmt.writeUInt32LE(sampleRate * channels * bytes, 8);
  fmt.writeUInt16LE(channels * bytes, 12);
  fmt.writeUInt16LE(bits, 14);
  if (layout.extensible) {
    fmt.writeUInt16LE(22, 16);
    fmt.writeUInt16LE(bits, 18);
    fmt.writeUInt32LE(channels === 2 ? 3 : 4, 20);
    // KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT: the tag, then the fixed GUID tail.
    fmt.writeUInt16LE(tag, 24);
    Buffer.from("000000001000800000aa00389b71", "hex").copy(fmt, 26);
  }
  return riffFile([chunk("fmt ", fmt), chunk("data", data)]);
}

/** A 440 Hz sine whose RMS is `dbfs`. */
export function toneWav(
  options: { dbfs?: number; seconds?: number; frequency?: number } & WavLayout = {},
): Buffer {
  const { dbfs = -40, seconds = 1, frequency = 440, sampleRate = 16000, channels = 1 } = options;
  const amplitude = Math.SQRT2 * 10 ** (dbfs / 20);
  const frames = Math.round(seconds * sampleRate);
  const samples = new Float64Array(frames * channels);
  for (let frame = 0; frame < frames; frame++) {
    const value = amplitude * Math.sin((2 * Math.PI * frequency * frame) / sampleRate);
    samples.fill(value, frame * channels, (frame + 1) * channels);
  }
  return encodeWav(samples, { ...options, sampleRate, channels });
}

/** White noise (uniform, seeded so every run is the same) whose RMS is `dbfs`. */
export function noiseWav(options: { dbfs: number; seconds?: number; seed?: number } & WavLayout): Buffer {
  const { dbfs, seconds = 1, seed = 1, sampleRate = 16000, channels = 1 } = options;
  // Uniform noise on [-b, b] has an RMS of b / sqrt(3).
  const bound = Math.sqrt(3) * 10 ** (dbfs / 20);
  const random = mulberry32(seed);
  const samples = new Float64Array(Math.round(seconds * sampleRate) * channels);
  for (let i = 0; i < samples.length; i++) samples[i] = (random() * 2 - 1) * bound;
  return encodeWav(samples, { ...options, sampleRate, channels });
}

/** Digital silence: every sample zero. */
export function silenceWav(seconds: number, layout: WavLayout = {}): Buffer {
  const sampleRate = layout.sampleRate ?? 16000;
  const channels = layout.channels ?? 1;
  return encodeWav(new Float64Array(Math.round(seconds * sampleRate) * channels), layout);
}

/** Bytes of silence quietThenLoudWav puts before its tone: more than the 2,000,000 the check reads. */
export const QUIET_LEAD_BYTES = 2_112_000;

/** 16 kHz mono: 66 s of digital silence (2,112,000 bytes of samples), then 1 s of a loud tone. */
export function quietThenLoudWav(): Buffer {
  const sampleRate = 16000;
  const leadFrames = QUIET_LEAD_BYTES / 2;
  const samples = new Float64Array(leadFrames + sampleRate);
  const amplitude = Math.SQRT2 * 10 ** (-20 / 20);
  for (let frame = 0; frame < sampleRate; frame++) {
    samples[leadFrames + frame] = amplitude * Math.sin((2 * Math.PI * 440 * frame) / sampleRate);
  }
  return encodeWav(samples, { sampleRate });
}

/** One RIFF chunk (id, size, body, pad byte when the size is odd). */
export function chunk(id: string, body: Buffer, declaredSize = body.length): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, 4, "latin1");
  header.writeUInt32LE(declaredSize, 4);
  return Buffer.concat([header, body, Buffer.alloc(body.length % 2)]);
}

/** A RIFF/WAVE file made of the given chunks, in order. */
export function riffFile(chunks: Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from("WAVE", "latin1"), ...chunks]);
  const header = Buffer.alloc(8);
  header.write("RIFF", 0, 4, "latin1");
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}

/** A temporary folder for files the tests write; `cleanup` removes it. */
export async function tempFolder(): Promise<{
  path(name: string): string;
  write(name: string, data: Buffer): Promise<string>;
  cleanup(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "zona-media-"));
  return {
    path: (name) => join(dir, name),
    async write(name, data) {
      const path = join(dir, name);
      await writeFile(path, data);
      return path;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, value));
}

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
