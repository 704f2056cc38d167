import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  AI_VIDEO_COMMENT,
  AI_VIDEO_DESCRIPTION,
  markMp4AsAi,
  readMp4Xmp,
  stripMp4Audio,
  XMP_UUID,
} from "../../src/media/mp4-ai-mark.ts";
import { Mp4Error } from "../../src/media/mp4-boxes.ts";
import { mp4Info } from "../../src/media/mp4-info.ts";
import { TRAINED_ALGORITHMIC_MEDIA } from "../../src/media/xmp.ts";
import {
  type Box,
  body,
  chunkOffsets,
  expectSameVideoSamples,
  find,
  handler,
  header,
  kids,
  moovFirst,
  rewrite,
  traks,
  under,
  walk,
  withCo64,
  withLargeMdat,
  withoutUdta,
  withSizeZeroMdat,
} from "./mp4-walk.ts";

const hasExiftool = spawnSync("exiftool", ["-ver"]).status === 0;
const fixture = (name: string) => readFileSync(new URL(`../fixtures/video/${name}`, import.meta.url));

function exiftool(mp4: Buffer, args: string[]): string {
  const result = spawnSync("exiftool", [...args, "-"], { input: mp4, encoding: "utf8" });
  expect(result.status).toBe(0);
  return result.stdout;
}

interface Variant {
  name: string;
  /** The ffmpeg fixture it is made from. */
  source: string;
  make: (mp4: Buffer) => Buffer;
}
const asIs = (mp4: Buffer) => mp4;
const withSound: Variant[] = [
  { name: "1280x704 faststart", source: "clip-audio-faststart.mp4", make: asIs },
  { name: "moov after mdat", source: "clip-audio.mp4", make: asIs },
  { name: "faststart with co64", source: "clip-audio-faststart.mp4", make: withCo64 },
  { name: "moov after mdat with co64", source: "clip-audio.mp4", make: withCo64 },
  { name: "faststart, 64-bit mdat size", source: "clip-audio-faststart.mp4", make: withLargeMdat },
  { name: "moov after mdat, 64-bit mdat size", source: "clip-audio.mp4", make: withLargeMdat },
  { name: "faststart, size-0 mdat", source: "clip-audio-faststart.mp4", make: withSizeZeroMdat },
];
const withoutSound: Variant[] = [
  { name: "faststart", source: "clip-faststart.mp4", make: asIs },
  { name: "moov after mdat", source: "clip.mp4", make: asIs },
  { name: "faststart with co64", source: "clip-faststart.mp4", make: withCo64 },
  { name: "faststart, size-0 mdat", source: "clip-faststart.mp4", make: withSizeZeroMdat },
  { name: "moov after mdat, no udta", source: "clip.mp4", make: withoutUdta },
];
const build = (v: Variant) => v.make(fixture(v.source));

describe("the test's own variants keep the ffmpeg fixtures' samples", () => {
  it.each([...withSound, ...withoutSound])("$source as $name", (v) => {
    const original = fixture(v.source);
    const variant = build(v);
    expectSameVideoSamples(original, variant);
    expect(mp4Info(variant)).toEqual(mp4Info(original));
  });
});

describe("stripMp4Audio removes the sound track", () => {
  it.each(withSound)("$name: one video trak left, every chunk still points at its samples", (v) => {
    const mp4 = build(v);
    const stripped = stripMp4Audio(mp4);
    expect(traks(mp4).map((t) => handler(mp4, t))).toEqual(["vide", "soun"]);
    expect(traks(stripped).map((t) => handler(stripped, t))).toEqual(["vide"]);
    expectSameVideoSamples(mp4, stripped);
    const before = chunkOffsets(mp4, "vide");
    const after = chunkOffsets(stripped, "vide");
    const shrink = (find(mp4, "moov")?.size ?? 0) - (find(stripped, "moov")?.size ?? 0);
    expect(shrink).toBeGreaterThan(0);
    const shift = moovFirst(mp4) ? -shrink : 0;
    expect(after).toEqual(before.map((o) => o + shift));
    expect(mp4Info(stripped)).toMatchObject({ hasAudio: false, hasVideo: true, fps: 24 });
  });

  it("the movie duration becomes the picture's when the sound was longer (6 s to 5 s)", () => {
    const mp4 = fixture("clip-audio.mp4");
    expect(mp4Info(mp4).durationSeconds).toBe(6);
    expect(mp4Info(stripMp4Audio(mp4)).durationSeconds).toBe(5);
  });

  it("1280x704, 5 s, 24 fps after stripping", () => {
    expect(mp4Info(stripMp4Audio(fixture("clip-audio-faststart.mp4")))).toEqual({
      durationSeconds: 5,
      width: 1280,
      height: 704,
      fps: 24,
      hasAudio: false,
      hasVideo: true,
    });
  });

  it.each(withoutSound)("$name: a file without sound comes back unchanged", (v) => {
    const mp4 = build(v);
    expect(stripMp4Audio(mp4)).toBe(mp4);
  });

  it("a fragmented file with sound is refused with Mp4Error", () => {
    const fragmented = readFileSync(new URL("../fixtures/audio/tone-fragmented.mp4", import.meta.url));
    expect(() => stripMp4Audio(fragmented)).toThrow(Mp4Error);
    expect(() => stripMp4Audio(fragmented)).toThrow(/fragmented/);
  });

  describe.skipIf(!hasExiftool)("read back by exiftool", () => {
    it.each(withSound.slice(0, 2))("$name: one track, no audio handler, valid", (v) => {
      const stripped = stripMp4Audio(build(v));
      const tags = exiftool(stripped, ["-a", "-G1", "-s", "-TrackDuration", "-HandlerType", "-Duration"]);
      expect(tags).toMatch(/\[Track1\]\s+TrackDuration\s+: 5\.00 s/);
      expect(tags).not.toMatch(/Track2|Audio Track/);
      expect(tags).toMatch(/\[QuickTime\]\s+Duration\s+: 5\.00 s/);
      expect(exiftool(stripped, ["-validate", "-warning", "-a", "-s"]).trim()).toBe(
        "Validate                        : OK",
      );
    });
  });
});

describe("markMp4AsAi marks the clip as made by AI", () => {
  const cases: Variant[] = [
    ...withoutSound,
    ...withSound.map((v) => ({
      ...v,
      name: `${v.name}, sound stripped`,
      make: (b: Buffer) => stripMp4Audio(v.make(b)),
    })),
  ];

  it.each(cases)("$name: XMP uuid last, one comment, samples and info unchanged", (v) => {
    const mp4 = build(v);
    const marked = markMp4AsAi(mp4);
    const top = walk(marked);
    const last = top.at(-1);
    expect(last?.type).toBe("uuid");
    expect(top.filter((b) => b.type === "uuid")).toHaveLength(1);
    expect(
      body(marked, last as Box)
        .subarray(0, 16)
        .equals(XMP_UUID),
    ).toBe(true);
    const xmp = readMp4Xmp(marked) ?? "";
    expect(xmp).toContain(`Iptc4xmpExt:DigitalSourceType="${TRAINED_ALGORITHMIC_MEDIA}"`);
    expect(xmp).toContain('xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"');
    expect(xmp).toContain('xmp:CreatorTool="Zona"');
    expect(xmp).toContain(AI_VIDEO_DESCRIPTION);
    const ilst = find(marked, "moov", "udta", "meta", "ilst") as Box;
    const comments = kids(marked, ilst).filter((b) => b.type === "\u00a9cmt");
    expect(comments).toHaveLength(1);
    const data = body(marked, comments[0] as Box);
    expect(data.toString("latin1", 4, 8)).toBe("data");
    expect(data.subarray(16).toString("utf8")).toBe(AI_VIDEO_COMMENT);
    expect(mp4Info(marked)).toEqual(mp4Info(mp4));
    expectSameVideoSamples(mp4, marked);
    const grew = (find(marked, "moov")?.size ?? 0) - (find(mp4, "moov")?.size ?? 0);
    const shift = moovFirst(mp4) ? grew : 0;
    expect(chunkOffsets(marked, "vide")).toEqual(chunkOffsets(mp4, "vide").map((o) => o + shift));
  });

  it.each(cases)("$name: marking twice gives the same bytes", (v) => {
    const once = markMp4AsAi(build(v));
    expect(markMp4AsAi(once).equals(once)).toBe(true);
    expect(stripMp4Audio(once)).toBe(once);
  });

  it("nothing else is removed: every top-level box and moov child stays, with ffmpeg's ©too", () => {
    const mp4 = fixture("clip-faststart.mp4");
    const marked = markMp4AsAi(mp4);
    expect(walk(marked).map((b) => b.type)).toEqual([...walk(mp4).map((b) => b.type), "uuid"]);
    for (const box of walk(mp4).filter((b) => b.type !== "moov")) {
      const same = walk(marked).find((b) => b.type === box.type) as Box;
      expect(body(marked, same).equals(body(mp4, box))).toBe(true);
    }
    const moovTypes = (buf: Buffer) => kids(buf, find(buf, "moov") as Box).map((b) => b.type);
    expect(moovTypes(marked)).toEqual(moovTypes(mp4));
    const items = (buf: Buffer) =>
      kids(buf, find(buf, "moov", "udta", "meta", "ilst") as Box).map((b) => b.type);
    expect(items(marked)).toEqual([...items(mp4), "\u00a9cmt"]);
  });

  it("a size-0 mdat gets its real size once the XMP box follows it", () => {
    const mp4 = withSizeZeroMdat(fixture("clip-faststart.mp4"));
    const marked = markMp4AsAi(mp4);
    const mdat = walk(marked).find((b) => b.type === "mdat") as Box;
    expect(marked.readUInt32BE(mdat.start)).toBe(mdat.size);
    expect(mdat.size).toBe(walk(mp4).at(-1)?.size);
  });

  it("an old XMP box in the middle of the file is replaced, the samples follow", () => {
    const mp4 = fixture("clip-faststart.mp4");
    const old = Buffer.concat([header("uuid", 16 + 5), XMP_UUID, Buffer.from("<old>")]);
    const boxes = walk(mp4);
    const mdat = boxes.find((b) => b.type === "mdat") as Box;
    const withOld = Buffer.concat([mp4.subarray(0, mdat.start), old, mp4.subarray(mdat.start)]);
    // the inserted box moved mdat: the test's own fix-up of the offsets
    const fixed = rewrite(withOld, (box) => {
      if (box.type !== "stco") return undefined;
      const data = Buffer.from(body(withOld, box));
      for (let i = 0; i < data.readUInt32BE(4); i++)
        data.writeUInt32BE(data.readUInt32BE(8 + i * 4) + old.length, 8 + i * 4);
      return Buffer.concat([header("stco", data.length), data]);
    });
    expectSameVideoSamples(mp4, fixed);
    const marked = markMp4AsAi(fixed);
    expect(walk(marked).filter((b) => b.type === "uuid")).toHaveLength(1);
    expect(marked.includes("<old>")).toBe(false);
    expectSameVideoSamples(mp4, marked);
  });

  describe.skipIf(!hasExiftool)("read back by exiftool", () => {
    it.each(cases)("$name: DigitalSourceType and Comment found, -validate OK", (v) => {
      const marked = markMp4AsAi(build(v));
      const tags = exiftool(marked, ["-a", "-G1", "-s", "-XMP-iptcExt:DigitalSourceType", "-Comment"]);
      expect(tags).toMatch(
        new RegExp(`\\[XMP-iptcExt\\]\\s+DigitalSourceType\\s+: ${TRAINED_ALGORITHMIC_MEDIA}`),
      );
      expect(tags).toMatch(new RegExp(`\\[ItemList\\]\\s+Comment\\s+: ${escapeRegExp(AI_VIDEO_COMMENT)}`));
      const more = exiftool(marked, ["-s3", "-XMP-xmp:CreatorTool", "-XMP-dc:Description"])
        .trim()
        .split("\n");
      expect(more).toEqual(["Zona", AI_VIDEO_DESCRIPTION]);
      expect(exiftool(marked, ["-validate", "-warning", "-a", "-s"]).trim()).toBe(
        "Validate                        : OK",
      );
    });
  });
});

describe("malformed MP4 throws Mp4Error", () => {
  const clip = () => fixture("clip.mp4");
  const patch = (buf: Buffer, at: number, bytes: number[]) => {
    const out = Buffer.from(buf);
    Buffer.from(bytes).copy(out, at);
    return out;
  };
  const at = (buf: Buffer, ...path: string[]) => (find(buf, ...path) as Box).start;
  const stbl = (buf: Buffer) => under(buf, traks(buf)[0] as Box, "mdia", "minf", "stbl");
  const stco = (buf: Buffer) => under(buf, stbl(buf), "stco").start;
  const bad: [string, () => Buffer, RegExp][] = [
    ["empty", () => Buffer.alloc(0), /not an MP4/],
    ["text", () => Buffer.from("not a video, just some words"), /not an MP4|truncated/],
    ["no ftyp", () => clip().subarray(32), /no ftyp/],
    ["no moov", () => clip().subarray(0, at(clip(), "moov")), /no moov/],
    [
      "two moov boxes",
      () => {
        const moov = find(clip(), "moov") as Box;
        return Buffer.concat([clip(), clip().subarray(moov.start, moov.start + moov.size)]);
      },
      /more than one moov/,
    ],
    ["truncated moov", () => clip().subarray(0, clip().length - 100), /truncated/],
    ["truncated mdat", () => fixture("clip-faststart.mp4").subarray(0, 4000), /truncated/],
    ["box smaller than its header", () => patch(clip(), at(clip(), "free"), [0, 0, 0, 4]), /size 4/],
    [
      "64-bit size beyond reason",
      () =>
        patch(clip(), at(clip(), "free"), [0, 0, 0, 1, 0x6d, 0x64, 0x61, 0x74, 0x10, 0, 0, 0, 0, 0, 0, 0]),
      /claims/,
    ],
    ["size 0 inside moov", () => patch(clip(), traks(clip())[0]?.start ?? 0, [0, 0, 0, 0]), /size 0/],
    [
      "box inside moov runs past its parent",
      () => patch(clip(), traks(clip())[0]?.start ?? 0, [0, 0, 0xff, 0]),
      /runs past the end/,
    ],
  ];
  it.each(bad)("%s", (_name, make, message) => {
    const mp4 = make();
    for (const f of [mp4Info, stripMp4Audio, markMp4AsAi]) {
      expect(() => f(mp4)).toThrow(Mp4Error);
      expect(() => f(mp4)).toThrow(message);
    }
  });

  it("a tkhd too short to hold the picture size throws in mp4Info", () => {
    const tkhd = under(clip(), traks(clip())[0] as Box, "tkhd");
    // tkhd keeps 8 bytes of payload, a free box fills the rest
    const mp4 = patch(clip(), tkhd.start, [0, 0, 0, 16]);
    mp4.writeUInt32BE(tkhd.size - 16, tkhd.start + 16);
    mp4.write("free", tkhd.start + 20, "latin1");
    expect(() => mp4Info(mp4)).toThrow(Mp4Error);
    expect(() => mp4Info(mp4)).toThrow(/tkhd box too short/);
  });

  it("a stco claiming more entries than it holds throws on marking", () => {
    const mp4 = patch(clip(), stco(clip()) + 12, [0, 0, 0xff, 0xff]);
    expect(() => markMp4AsAi(mp4)).toThrow(Mp4Error);
    expect(() => markMp4AsAi(mp4)).toThrow(/truncated MP4: stco/);
  });

  it("a chunk offset outside the sample data throws on marking", () => {
    const mp4 = patch(clip(), stco(clip()) + 16, [0, 0, 0, 0]);
    expect(() => markMp4AsAi(mp4)).toThrow(/chunk offset 0 points outside/);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
