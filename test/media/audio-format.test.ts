import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ACCEPTED_AUDIO_TYPES,
  acceptedFormatsText,
  classifyMime,
  detectAudioFormat,
} from "../../src/media/audio-format.ts";
import { tempFolder, toneWav } from "./wav-fixtures.ts";

const FIXTURES = join(import.meta.dirname, "../fixtures/audio");

const SPEC_ORDER = [
  "audio/wav",
  "audio/wave",
  "audio/x-wav",
  "audio/vnd.wave",
  "audio/mpeg",
  "audio/mp3",
  "audio/x-mpeg",
  "audio/mp4",
  "audio/m4a",
  "audio/x-m4a",
  "video/mp4",
  "audio/ogg",
  "video/ogg",
  "application/ogg",
  "audio/opus",
  "audio/webm",
  "video/webm",
  "audio/flac",
  "audio/x-flac",
  "audio/3gpp",
  "video/3gpp",
  "audio/amr",
];

// What file-type reports for each committed fixture, and what the gateway makes of it.
const FIXTURE_CASES = [
  { file: "tone-id3.mp3", detected: "audio/mpeg", mime: "audio/mpeg", container: "mp3" },
  { file: "tone-plain.mp3", detected: "audio/mpeg", mime: "audio/mpeg", container: "mp3" },
  { file: "tone.ogg", detected: "audio/ogg", mime: "audio/ogg", container: "ogg" },
  { file: "tone.opus", detected: "audio/ogg; codecs=opus", mime: "audio/ogg", container: "ogg" },
  { file: "tone.flac", detected: "audio/flac", mime: "audio/flac", container: "flac" },
  { file: "tone.m4a", detected: "audio/x-m4a", mime: "audio/mp4", container: "mp4" },
  { file: "tone.mp4", detected: "video/mp4", mime: "audio/mp4", container: "mp4" },
  { file: "tone-fragmented.mp4", detected: "video/mp4", mime: "audio/mp4", container: "mp4" },
  { file: "tone.webm", detected: "video/webm", mime: "audio/webm", container: "webm" },
  { file: "tone-live.webm", detected: "video/webm", mime: "audio/webm", container: "webm" },
  { file: "tone.3gp", detected: "video/3gpp", mime: "audio/3gpp", container: "3gpp" },
  { file: "tone.amr", detected: "audio/amr", mime: "audio/amr", container: "amr" },
] as const;

const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);

// Content that is not an accepted audio format, and what the 400 message will name.
const REFUSED_CASES = [
  {
    name: "plain text",
    data: Buffer.from("Hello, this is not audio at all.\n".repeat(20)),
    detected: "text/plain",
  },
  {
    name: "text longer than the head that is read, cut inside a character",
    data: Buffer.from(`${"a".repeat(8191)}è and more text`),
    detected: "text/plain",
  },
  { name: "HTML page", data: Buffer.from("<!doctype html><title>x</title><p>hi</p>"), detected: "text/html" },
  { name: "HTML without doctype", data: Buffer.from("<html><body>hi</body></html>"), detected: "text/html" },
  { name: "JSON document", data: Buffer.from('{"a": [1, 2]}'), detected: "application/json" },
  { name: "text that only starts like JSON", data: Buffer.from("{not json"), detected: "text/plain" },
  { name: "PNG image", data: PNG, detected: "image/png" },
  {
    name: "PDF document",
    data: Buffer.from("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"),
    detected: "application/pdf",
  },
  { name: "empty file", data: Buffer.alloc(0), detected: "empty (0 bytes)" },
  {
    name: "garbage bytes",
    data: Buffer.from("deadbeef0badf00d".repeat(64), "hex"),
    detected: "unknown binary data",
  },
  { name: "truncated WAV (first 8 bytes)", data: toneWav().subarray(0, 8), detected: "unknown binary data" },
  {
    name: "truncated Ogg (first 10 bytes)",
    data: Buffer.from("OggS\0\x02\0\0\0\0"),
    detected: "unknown binary data",
  },
  { name: "AIFF audio, not on the list", data: aiffHead(), detected: "audio/aiff" },
  {
    name: "ADTS AAC audio, not on the list",
    data: Buffer.from("fff15080021ffc".repeat(8), "hex"),
    detected: "audio/aac",
  },
] as const;

let folder: Awaited<ReturnType<typeof tempFolder>>;
beforeAll(async () => {
  folder = await tempFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

describe("accepted transcription formats", () => {
  it("lists the 22 accepted types in the spec's order", () => {
    expect(ACCEPTED_AUDIO_TYPES).toEqual(SPEC_ORDER);
    expect(acceptedFormatsText()).toBe(SPEC_ORDER.join(", "));
  });

  it.each(SPEC_ORDER)("every accepted type maps onto a container: %s", (mime) => {
    const format = classifyMime(mime);
    expect(format.accepted).toBe(true);
    if (format.accepted) expect(ACCEPTED_AUDIO_TYPES).toContain(format.mime);
  });

  it.each(FIXTURE_CASES)("is detected from content: $file -> $mime", async ({
    file,
    detected,
    mime,
    container,
  }) => {
    expect(await detectAudioFormat(join(FIXTURES, file))).toEqual({
      accepted: true,
      mime,
      container,
      detected,
    });
  });

  it.each([
    { name: "16-bit PCM", wav: toneWav() },
    { name: "24-bit extensible", wav: toneWav({ bits: 24, extensible: true }) },
    { name: "float", wav: toneWav({ float: true }) },
  ])("is detected from content: WAV ($name) -> audio/wav", async ({ wav }) => {
    const path = await folder.write("tone.wav", wav);
    expect(await detectAudioFormat(path)).toEqual({
      accepted: true,
      mime: "audio/wav",
      container: "wav",
      detected: "audio/wav",
    });
  });

  it("ignores the file name: FLAC named .wav is FLAC, a PNG named .mp3 is refused", async () => {
    const flacAsWav = folder.path("speech.wav");
    await copyFile(join(FIXTURES, "tone.flac"), flacAsWav);
    expect(await detectAudioFormat(flacAsWav)).toMatchObject({ accepted: true, container: "flac" });
    const pngAsMp3 = await folder.write("speech.mp3", PNG);
    expect(await detectAudioFormat(pngAsMp3)).toEqual({ accepted: false, detected: "image/png" });
  });
});

describe("refused transcription formats", () => {
  it.each(REFUSED_CASES)("refuses $name, naming $detected", async ({ data, detected }) => {
    const path = await folder.write("upload.bin", data);
    expect(await detectAudioFormat(path)).toEqual({ accepted: false, detected });
  });
});

function aiffHead(): Buffer {
  const comm = Buffer.alloc(26);
  comm.write("COMM", 0, "latin1");
  comm.writeUInt32BE(18, 4);
  const head = Buffer.alloc(12);
  head.write("FORM", 0, "latin1");
  head.writeUInt32BE(4 + comm.length, 4);
  head.write("AIFF", 8, "latin1");
  return Buffer.concat([head, comm]);
}
