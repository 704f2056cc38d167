import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Mp4Error } from "../../src/media/mp4-boxes.ts";
import { type Mp4Info, mp4Info } from "../../src/media/mp4-info.ts";

const video = (name: string) => readFileSync(new URL(`../fixtures/video/${name}`, import.meta.url));
const audio = (name: string) => readFileSync(new URL(`../fixtures/audio/${name}`, import.meta.url));

describe("mp4Info reads duration, size, frame rate and tracks from moov", () => {
  const cases: [string, Buffer, Mp4Info][] = [
    [
      "1280x704, 5 s, 24 fps, with sound, faststart",
      video("clip-audio-faststart.mp4"),
      { durationSeconds: 5, width: 1280, height: 704, fps: 24, hasAudio: true, hasVideo: true },
    ],
    [
      "sound longer than the picture, moov last",
      video("clip-audio.mp4"),
      { durationSeconds: 6, width: 160, height: 88, fps: 24, hasAudio: true, hasVideo: true },
    ],
    [
      "no sound, faststart",
      video("clip-faststart.mp4"),
      { durationSeconds: 5, width: 160, height: 88, fps: 24, hasAudio: false, hasVideo: true },
    ],
    [
      "no sound, moov last",
      video("clip.mp4"),
      { durationSeconds: 5, width: 160, height: 88, fps: 24, hasAudio: false, hasVideo: true },
    ],
    [
      "16x16 at 5 fps with AAC",
      audio("tone.mp4"),
      { durationSeconds: 2, width: 16, height: 16, fps: 5, hasAudio: true, hasVideo: true },
    ],
    [
      "sound only (m4a): no size, no frame rate",
      audio("tone.m4a"),
      { durationSeconds: 2, width: 0, height: 0, fps: null, hasAudio: true, hasVideo: false },
    ],
  ];
  it.each(cases)("%s", (_name, mp4, expected) => {
    expect(mp4Info(mp4)).toEqual(expected);
  });

  it("frames of unequal length give fps null", () => {
    const mp4 = Buffer.from(video("clip.mp4"));
    const stts = mp4.indexOf("stts", 0, "latin1");
    // the first stts entry (count, delta) is split in two with different deltas
    const count = mp4.readUInt32BE(stts + 8);
    expect(count).toBe(1);
    const patched = Buffer.concat([
      mp4.subarray(0, stts - 4),
      Buffer.from([0, 0, 0, 32]),
      Buffer.from("stts\0\0\0\0\0\0\0\x02", "latin1"),
      u32(60),
      u32(512),
      u32(60),
      u32(513),
      mp4.subarray(stts + 20),
    ]);
    // moov is last and grew by 8 bytes: fix the sizes of moov and the boxes above stts
    for (const type of ["moov", "trak", "mdia", "minf", "stbl"]) {
      const at = patched.indexOf(type, 0, "latin1") - 4;
      patched.writeUInt32BE(patched.readUInt32BE(at) + 8, at);
    }
    expect(mp4Info(patched).fps).toBeNull();
    expect(mp4Info(patched).durationSeconds).toBe(5);
  });

  const bad: [string, Buffer, RegExp][] = [
    ["empty", Buffer.alloc(0), /not an MP4/],
    ["text", Buffer.from("this is not a video at all"), /not an MP4|truncated/],
    ["a PNG", Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"), /not an MP4/],
    ["no moov (truncated before it)", video("clip.mp4").subarray(0, 6056), /no moov/],
    ["no ftyp", video("clip.mp4").subarray(32), /no ftyp/],
    ["truncated moov", video("clip.mp4").subarray(0, video("clip.mp4").length - 10), /truncated/],
    ["truncated mdat", video("clip-faststart.mp4").subarray(0, 3000), /truncated/],
  ];
  it.each(bad)("malformed input throws Mp4Error: %s", (_name, mp4, message) => {
    expect(() => mp4Info(mp4)).toThrow(Mp4Error);
    expect(() => mp4Info(mp4)).toThrow(message);
  });
});

function u32(value: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value, 0);
  return out;
}
