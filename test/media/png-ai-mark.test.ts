import { spawnSync } from "node:child_process";
import { crc32, deflateSync } from "node:zlib";
import exifr from "exifr";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import {
  AI_IMAGE_COMMENT,
  AI_IMAGE_DESCRIPTION,
  markPngAsAi,
  TRAINED_ALGORITHMIC_MEDIA,
  XMP_KEYWORD,
} from "../../src/media/png-ai-mark.ts";
import {
  encodePngChunk,
  PNG_SIGNATURE,
  PngError,
  pngSize,
  readPngChunks,
  readPngText,
  writePngChunks,
  writePngText,
} from "../../src/media/png-chunks.ts";

const hasExiftool = spawnSync("exiftool", ["-ver"]).status === 0;

/** A PNG with varied pixels and an alpha channel, as an engine would send. */
async function enginePng(options: { palette?: boolean } = {}): Promise<Buffer> {
  const width = 33;
  const height = 17;
  const raw = Buffer.alloc(width * height * 4);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 37 + (i >> 5)) & 0xff;
  return sharp(raw, { raw: { width, height, channels: 4 } })
    .png({ palette: options.palette ?? false })
    .toBuffer();
}

/** What ComfyUI and A1111 leave in their PNGs: prompt, workflow, parameters, zTXt, iTXt, eXIf. */
async function comfyPng(options: { palette?: boolean } = {}): Promise<Buffer> {
  let png = await enginePng(options);
  png = writePngText(png, "prompt", '{"3":{"inputs":{"text":"a secret prompt"}}}');
  png = writePngText(png, "workflow", '{"nodes":[]}');
  png = writePngText(png, "parameters", "a secret prompt\nSteps: 20");
  const [ihdr, ...others] = readPngChunks(png);
  const iend = others.pop();
  if (!ihdr || !iend) throw new Error("fixture PNG without IHDR or IEND");
  const extra = [
    { type: "zTXt", data: Buffer.concat([Buffer.from("Description\0\0"), deflateSync("a secret prompt")]) },
    { type: "iTXt", data: Buffer.from("Title\0\0\0\0\0a secret prompt") },
  ];
  const eXIf = { type: "eXIf", data: Buffer.from("MM\0*\0\0\0\x08\0\0\0\0\0\0", "latin1") };
  return writePngChunks([ihdr, eXIf, ...others, ...extra, iend]);
}

/** An independent strict walk: chunk types in order, every CRC recomputed. */
function walk(png: Buffer): { type: string; data: Buffer }[] {
  expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
  const out: { type: string; data: Buffer }[] = [];
  let pos = 8;
  while (pos < png.length) {
    const length = png.readUInt32BE(pos);
    const typeAndData = png.subarray(pos + 4, pos + 8 + length);
    expect(png.readUInt32BE(pos + 8 + length)).toBe(crc32(typeAndData));
    out.push({ type: typeAndData.toString("latin1", 0, 4), data: typeAndData.subarray(4) });
    pos += 12 + length;
  }
  expect(pos).toBe(png.length);
  expect(out.at(-1)?.type).toBe("IEND");
  return out;
}

function idat(png: Buffer): Buffer {
  return Buffer.concat(
    walk(png)
      .filter((c) => c.type === "IDAT")
      .map((c) => c.data),
  );
}

function exiftool(png: Buffer, args: string[]): string {
  const result = spawnSync("exiftool", [...args, "-"], { input: png, encoding: "latin1" });
  expect(result.status).toBe(0);
  return result.stdout;
}

describe("Image request and response: every PNG is marked as made by AI", () => {
  it.each([
    ["truecolour with alpha", false],
    ["palette (PLTE before IDAT)", true],
  ])("marks are read back by exifr (%s)", async (_name, palette) => {
    const marked = markPngAsAi(await comfyPng({ palette }));
    const meta = await exifr.parse(marked, { xmp: true, ihdr: true, mergeOutput: false });
    expect(meta.Iptc4xmpExt.DigitalSourceType).toBe(TRAINED_ALGORITHMIC_MEDIA);
    expect(meta.dc.description.value).toBe(AI_IMAGE_DESCRIPTION);
    expect(meta.ihdr.Comment).toBe(AI_IMAGE_COMMENT);
  });

  it("the prompt chunks an engine wrote are removed (tEXt, zTXt, iTXt, eXIf)", async () => {
    const engine = await comfyPng();
    expect(readPngText(engine)).toMatchObject({ prompt: expect.any(String), workflow: expect.any(String) });
    const marked = markPngAsAi(engine);
    expect(Object.keys(readPngText(marked)).sort()).toEqual(["Comment", XMP_KEYWORD]);
    const types = walk(marked).map((c) => c.type);
    expect(types.filter((t) => ["tEXt", "zTXt", "iTXt", "eXIf"].includes(t))).toEqual(["iTXt", "tEXt"]);
    expect(marked.includes("secret")).toBe(false);
    const merged = await exifr.parse(marked, true);
    expect(merged.prompt).toBeUndefined();
    expect(merged.workflow).toBeUndefined();
  });

  it("XMP is an uncompressed iTXt and both marks come right after IHDR, before any IDAT", async () => {
    const chunks = walk(markPngAsAi(await comfyPng({ palette: true })));
    expect(chunks.map((c) => c.type).slice(0, 3)).toEqual(["IHDR", "iTXt", "tEXt"]);
    const xmp = chunks[1]?.data ?? Buffer.alloc(0);
    expect(xmp.subarray(0, XMP_KEYWORD.length + 3).toString("latin1")).toBe(`${XMP_KEYWORD}\0\0\0`);
    expect(xmp.toString("utf8")).toContain('xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/"');
    expect(chunks[2]?.data.toString("latin1")).toBe(`Comment\0${AI_IMAGE_COMMENT}`);
  });

  it("pixels are untouched (IDAT bytes and decoded pixels identical)", async () => {
    const engine = await comfyPng();
    const marked = markPngAsAi(engine);
    expect(idat(marked).equals(idat(engine))).toBe(true);
    const [a, b] = await Promise.all([sharp(engine).raw().toBuffer(), sharp(marked).raw().toBuffer()]);
    expect(b.equals(a)).toBe(true);
    expect(pngSize(marked)).toEqual({ width: 33, height: 17 });
  });

  it("marking twice gives one set of marks", async () => {
    const once = markPngAsAi(await comfyPng());
    expect(markPngAsAi(once).equals(once)).toBe(true);
  });

  describe.skipIf(!hasExiftool)("read back by exiftool", () => {
    it("exiftool -validate has no warning and finds DigitalSourceType and Comment", async () => {
      const marked = markPngAsAi(await comfyPng({ palette: true }));
      expect(exiftool(marked, ["-validate", "-warning", "-a", "-s"]).trim()).toBe(
        "Validate                        : OK",
      );
      const tags = exiftool(marked, ["-s3", "-XMP-iptcExt:DigitalSourceType", "-PNG:Comment"])
        .trim()
        .split("\n");
      expect(tags).toEqual([TRAINED_ALGORITHMIC_MEDIA, AI_IMAGE_COMMENT]);
      expect(exiftool(marked, ["-a", "-s", "-PNG:all"])).not.toMatch(/prompt|workflow|parameters/i);
    });
  });
});

describe("PNG chunks are read strictly", () => {
  const bad: [string, (png: Buffer) => Buffer, RegExp][] = [
    ["not a PNG", () => Buffer.from("GIF89a not a png at all"), /signature/],
    ["empty", () => Buffer.alloc(0), /signature/],
    ["truncated in the middle", (png) => png.subarray(0, png.length - 20), /truncated/],
    ["truncated before IEND", (png) => png.subarray(0, png.length - 12), /truncated/],
    ["bad CRC", (png) => flipByte(png, 8 + 8 + 13), /CRC/],
    ["bad data byte", (png) => flipByte(png, png.length - 20), /CRC/],
    ["no IHDR first", (png) => writePngChunks(readPngChunks(png).slice(1)), /IHDR/],
    ["no IDAT", (png) => writePngChunks(readPngChunks(png).filter((c) => c.type !== "IDAT")), /IDAT/],
  ];
  it.each(bad)("%s throws PngError", async (_name, spoil, message) => {
    const png = spoil(await enginePng());
    for (const f of [markPngAsAi, readPngText, pngSize, (p: Buffer) => writePngText(p, "k", "v")]) {
      expect(() => f(png)).toThrow(PngError);
      expect(() => f(png)).toThrow(message);
    }
  });

  it("bytes after IEND are dropped", async () => {
    const png = await enginePng();
    const marked = markPngAsAi(Buffer.concat([png, Buffer.from("hidden prompt")]));
    expect(walk(marked).at(-1)?.type).toBe("IEND");
    expect(marked.includes("hidden")).toBe(false);
  });

  it("writePngText writes tEXt before the first IDAT, iTXt for text beyond Latin-1", async () => {
    const png = writePngText(writePngText(await enginePng(), "prompt", "café"), "workflow", "猫 {}");
    const types = walk(png).map((c) => c.type);
    expect(types.indexOf("tEXt")).toBeLessThan(types.indexOf("IDAT"));
    expect(types.indexOf("iTXt")).toBeLessThan(types.indexOf("IDAT"));
    expect(readPngText(png)).toEqual({ prompt: "café", workflow: "猫 {}" });
    // exifr decodes tEXt as UTF-8 (the PNG spec says Latin-1), so it is checked on ASCII text.
    const ascii = writePngText(await enginePng(), "prompt", "a cat");
    expect((await exifr.parse(ascii, true)).prompt).toBe("a cat");
  });

  it.each(["", "k".repeat(80), "猫", "a\0b"])("writePngText refuses the keyword %j", async (keyword) => {
    const png = await enginePng();
    expect(() => writePngText(png, keyword, "v")).toThrow(PngError);
  });

  it("encodePngChunk refuses a chunk type that is not four letters", () => {
    expect(() => encodePngChunk({ type: "tEX1", data: Buffer.alloc(0) })).toThrow(PngError);
  });
});

function flipByte(png: Buffer, at: number): Buffer {
  const copy = Buffer.from(png);
  copy[at] = (copy[at] ?? 0) ^ 0xff;
  return copy;
}
