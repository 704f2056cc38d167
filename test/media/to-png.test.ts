import exifr from "exifr";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { PNG_SIGNATURE, pngSize, readPngText } from "../../src/media/png-chunks.ts";
import { toPng, UnsupportedImageError } from "../../src/media/to-png.ts";

const WIDTH = 24;
const HEIGHT = 10;

function picture() {
  return sharp({
    create: { width: WIDTH, height: HEIGHT, channels: 3, background: { r: 200, g: 40, b: 90 } },
  });
}

// Metadata an engine could put in a JPEG or WebP, with the prompt in it.
const ENGINE_EXIF = { IFD0: { ImageDescription: "a secret prompt", Software: "ComfyUI" } };

describe("a JPEG or WebP from an engine is converted to PNG", () => {
  it("a PNG is returned as is", async () => {
    const png = await picture().png().toBuffer();
    expect(await toPng(png)).toBe(png);
  });

  it.each([
    ["JPEG", () => picture().jpeg().withExif(ENGINE_EXIF).toBuffer()],
    ["WebP", () => picture().webp({ lossless: true }).withExif(ENGINE_EXIF).toBuffer()],
  ])("%s becomes a PNG of the same size without its metadata", async (_name, make) => {
    const input = await make();
    expect((await sharp(input).metadata()).exif?.includes("a secret prompt")).toBe(true);
    const png = await toPng(input);
    expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    expect(pngSize(png)).toEqual({ width: WIDTH, height: HEIGHT });
    const meta = await sharp(png).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["png", WIDTH, HEIGHT]);
    expect(meta.exif).toBeUndefined();
    expect(await exifr.parse(png, true)).not.toHaveProperty("ImageDescription");
    expect(readPngText(png)).toEqual({});
    expect(png.includes("secret")).toBe(false);
  });

  it("the Exif orientation of a JPEG is applied to the pixels before the Exif is dropped", async () => {
    const jpeg = await picture().jpeg().withMetadata({ orientation: 6 }).toBuffer();
    expect(pngSize(await toPng(jpeg))).toEqual({ width: HEIGHT, height: WIDTH });
  });

  it.each([
    ["GIF", () => picture().gif().toBuffer(), /image\/gif/],
    ["TIFF", () => picture().tiff().toBuffer(), /image\/tiff/],
    ["unknown bytes", async () => Buffer.from("definitely not a picture"), /unknown type/],
    ["nothing", async () => Buffer.alloc(0), /unknown type/],
  ])("%s throws an error naming the type", async (_name, make, message) => {
    const input = await make();
    await expect(toPng(input)).rejects.toThrow(UnsupportedImageError);
    await expect(toPng(input)).rejects.toThrow(message);
  });

  it("a broken JPEG throws an error naming the type", async () => {
    const jpeg = await picture().jpeg().toBuffer();
    const broken = jpeg.subarray(0, 40);
    await expect(toPng(broken)).rejects.toThrow(/image\/jpeg/);
  });
});
