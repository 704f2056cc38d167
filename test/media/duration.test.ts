import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { amrDurationSeconds } from "../../src/media/amr-duration.ts";
import { detectAudioFormat } from "../../src/media/audio-format.ts";
import { audioDurationSeconds } from "../../src/media/duration.ts";
import { readWavInfo } from "../../src/media/wav.ts";
import { webmDurationFromBlocks } from "../../src/media/webm-duration.ts";
import { tempFolder, toneWav } from "./wav-fixtures.ts";

const FIXTURES = join(import.meta.dirname, "../fixtures/audio");

// Every fixture holds 2.0 s of tone (see test/fixtures/audio/README.md).
const FIXTURE_FILES = [
  "tone-id3.mp3",
  "tone-plain.mp3",
  "tone.ogg",
  "tone.opus",
  "tone.flac",
  "tone.m4a",
  "tone.mp4",
  "tone-fragmented.mp4",
  "tone.webm",
  "tone-live.webm",
  "tone.3gp",
  "tone.amr",
];

let folder: Awaited<ReturnType<typeof tempFolder>>;
beforeAll(async () => {
  folder = await tempFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

describe("duration of accepted formats (billing per second, 10-minute rule)", () => {
  it.each(FIXTURE_FILES)("%s lasts 2.0 s (within 0.1 s)", async (file) => {
    const path = join(FIXTURES, file);
    const format = await detectAudioFormat(path);
    if (!format.accepted) throw new Error(`${file} was refused as ${format.detected}`);
    const seconds = await audioDurationSeconds(path, format);
    expect(seconds).not.toBeNull();
    expect(Math.abs((seconds ?? 0) - 2)).toBeLessThanOrEqual(0.1);
  });

  it.each([
    { name: "16-bit mono 16 kHz", wav: () => toneWav({ seconds: 3 }), seconds: 3 },
    {
      name: "24-bit stereo 48 kHz",
      wav: () => toneWav({ seconds: 1.5, bits: 24, channels: 2, sampleRate: 48000 }),
      seconds: 1.5,
    },
    { name: "float", wav: () => toneWav({ seconds: 0.75, float: true }), seconds: 0.75 },
  ])("WAV ($name) takes its duration from the header", async ({ wav, seconds }) => {
    const path = await folder.write("tone.wav", wav());
    expect(await audioDurationSeconds(path, "wav")).toBe(seconds);
    const header = await readWavInfo(path);
    if (!header.ok) throw new Error(header.reason);
    expect(await audioDurationSeconds(path, "wav", header.info)).toBe(seconds);
  });

  it("a WAV with a broken header has no duration", async () => {
    const path = await folder.write("broken.wav", Buffer.from("RIFF\0\0\0\0WAVE"));
    expect(await audioDurationSeconds(path, "wav")).toBeNull();
  });

  it("a file the parser cannot follow has no duration", async () => {
    const path = await folder.write("garbage.mp3", Buffer.from("deadbeef".repeat(100), "hex"));
    expect(await audioDurationSeconds(path, "mp4")).toBeNull();
  });

  it("a WebM without a Duration element (browser recordings) is measured from its blocks", async () => {
    const seconds = await webmDurationFromBlocks(join(FIXTURES, "tone-live.webm"));
    expect(Math.abs((seconds ?? 0) - 2)).toBeLessThanOrEqual(0.1);
    expect(await webmDurationFromBlocks(join(FIXTURES, "tone.ogg"))).toBeNull();
  });
});

describe("raw AMR duration (frames of 20 ms)", () => {
  it.each([
    // Frame type in bits 3-6 of the first byte; 12.2 kbit/s frames are 32 bytes, SID 6, NO_DATA 1.
    {
      name: "AMR-NB, mixed frame types",
      file: amr("#!AMR\n", [
        [7 << 3, 32, 30],
        [8 << 3, 6, 10],
        [15 << 3, 1, 10],
      ]),
      seconds: 1,
    },
    { name: "AMR-WB, 12.65 kbit/s frames", file: amr("#!AMR-WB\n", [[2 << 3, 33, 75]]), seconds: 1.5 },
    {
      name: "AMR-NB, last frame cut short",
      file: amr("#!AMR\n", [[7 << 3, 32, 10]]).subarray(0, 6 + 32 * 10 - 5),
      seconds: 0.2,
    },
    { name: "AMR-NB, header only", file: Buffer.from("#!AMR\n"), seconds: 0 },
  ])("$name", async ({ file, seconds }) => {
    const path = await folder.write("speech.amr", file);
    expect(await amrDurationSeconds(path)).toBeCloseTo(seconds, 6);
  });

  it("counts frames across read blocks (a 20-minute AMR-NB file)", async () => {
    const path = await folder.write("long.amr", amr("#!AMR\n", [[7 << 3, 32, 60_000]]));
    expect(await amrDurationSeconds(path)).toBeCloseTo(1200, 6);
  });

  it("is null for a file that is not raw AMR", async () => {
    const path = await folder.write("not.amr", Buffer.from("#!AMR_MC1.0\n\0\0\0\x01"));
    expect(await amrDurationSeconds(path)).toBeNull();
  });
});

/** A raw AMR file: the magic, then runs of [first byte, frame size in bytes, frame count]. */
function amr(magic: string, runs: [number, number, number][]): Buffer {
  const frames = runs.flatMap(([toc, size, count]) =>
    Array.from({ length: count }, () => Buffer.concat([Buffer.from([toc]), Buffer.alloc(size - 1, 0x55)])),
  );
  return Buffer.concat([Buffer.from(magic, "latin1"), ...frames]);
}
