import { createHash, randomInt } from "node:crypto";
import { crc32 } from "node:zlib";
import sharp from "sharp";

/** What the `zona-fake` text chunk of a fake picture says: which prompt and seed made it. */
export interface FakePictureMark {
  /** The first 16 hex digits of the prompt's SHA-256. */
  prompt_hash: string;
  seed: number;
}

/** What a fake engine makes a picture of. */
export interface FakePictureRequest {
  prompt: string;
  /** Absent: a random one, as real engines do. */
  seed?: number | undefined;
  width: number;
  height: number;
  /** Default PNG. */
  format?: "png" | "jpeg";
  /** More tEXt chunks of a PNG (keyword -> text), as ComfyUI writes `prompt` and `workflow`. */
  text?: Record<string, string>;
}

/** The first 16 hex digits of a prompt's SHA-256, as the `zona-fake` chunk names it. */
export function promptHash(prompt: string): string {
  return createHash("sha256").update(prompt).digest("hex").slice(0, 16);
}

/**
 * A real picture, deterministic: one colour (from a hash of prompt and seed) at the asked size, with
 * a tEXt chunk `zona-fake` holding `{prompt_hash, seed}` (PNG only). The same prompt, seed and size
 * give the same bytes.
 */
export async function fakePicture(request: FakePictureRequest): Promise<{ data: Buffer; seed: number }> {
  const seed = request.seed ?? randomInt(0, 2_147_483_648);
  const digest = createHash("sha256").update(`${request.prompt}\u0000${seed}`).digest();
  const background = { r: digest[0] ?? 0, g: digest[1] ?? 0, b: digest[2] ?? 0 };
  const image = sharp({ create: { width: request.width, height: request.height, channels: 3, background } });
  if (request.format === "jpeg") return { data: await image.jpeg({ quality: 80 }).toBuffer(), seed };
  let png: Buffer = await image.png().toBuffer();
  const mark: FakePictureMark = { prompt_hash: promptHash(request.prompt), seed };
  for (const [keyword, text] of Object.entries({ ...request.text, "zona-fake": JSON.stringify(mark) })) {
    png = withPngText(png, keyword, text);
  }
  return { data: png, seed };
}

/** The PNG with a tEXt chunk (Latin-1 keyword and text) added right after IHDR. */
export function withPngText(png: Buffer, keyword: string, text: string): Buffer {
  const data = Buffer.concat([Buffer.from(keyword, "latin1"), Buffer.from([0]), Buffer.from(text, "latin1")]);
  const type = Buffer.from("tEXt", "latin1");
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  type.copy(chunk, 4);
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(Buffer.concat([type, data])), 8 + data.length);
  // Signature (8) + IHDR (4 length + 4 type + 13 data + 4 CRC).
  const afterHeader = 8 + 25;
  return Buffer.concat([png.subarray(0, afterHeader), chunk, png.subarray(afterHeader)]);
}

/** The tEXt chunks of a PNG (keyword -> text); throws when the bytes are not a PNG. */
export function readPngText(png: Buffer): Record<string, string> {
  if (png.length < 8 || png.readUInt32BE(0) !== 0x89504e47) throw new Error("not a PNG");
  const texts: Record<string, string> = {};
  let offset = 8;
  while (offset + 12 <= png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString("latin1", offset + 4, offset + 8);
    if (type === "tEXt") {
      const data = png.subarray(offset + 8, offset + 8 + length);
      const zero = data.indexOf(0);
      texts[data.toString("latin1", 0, zero)] = data.toString("latin1", zero + 1);
    }
    if (type === "IEND") break;
    offset += 12 + length;
  }
  return texts;
}

/** The `zona-fake` mark of a fake PNG, or undefined when it has none. */
export function fakePictureMark(png: Buffer): FakePictureMark | undefined {
  const text = readPngText(png)["zona-fake"];
  return text === undefined ? undefined : (JSON.parse(text) as FakePictureMark);
}
