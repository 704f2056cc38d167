/**
 * Any picture an image engine returns, as a PNG: clients get PNG only, while some engines
 * answer JPEG or WebP.
 */
import { loadOnFirstUse } from "../load-on-first-use.ts";
import { hasPngSignature } from "./png-chunks.ts";

// Loaded by the first engine picture: libvips is the largest native library Zona links, and many
// installations serve no images at all.
const loadFileType = loadOnFirstUse(() => import("file-type"));
const loadSharp = loadOnFirstUse(async () => (await import("sharp")).default);

/** An engine picture that cannot become a PNG (a type other than PNG, JPEG or WebP, or undecodable). */
export class UnsupportedImageError extends Error {
  override name = "UnsupportedImageError";
}

const CONVERTED_MIME = new Set(["image/jpeg", "image/webp", "image/apng"]);

/**
 * The picture as a PNG: a PNG is returned as is; JPEG and WebP (and animated PNG, first frame)
 * are decoded and re-encoded by sharp, which carries no metadata over. Anything else throws an
 * UnsupportedImageError naming the type found.
 */
export async function toPng(data: Buffer): Promise<Buffer> {
  const type = await (await loadFileType()).fileTypeFromBuffer(data);
  if (type?.mime === "image/png" || (!type && hasPngSignature(data))) return data;
  if (!type || !CONVERTED_MIME.has(type.mime)) {
    const found = type ? `${type.mime} (.${type.ext})` : "of an unknown type";
    throw new UnsupportedImageError(`engine picture is ${found}, not PNG, JPEG or WebP`);
  }
  const sharp = await loadSharp();
  try {
    // Orientation lives in the Exif that is dropped, so it is applied to the pixels first.
    return await sharp(data).autoOrient().png().toBuffer();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new UnsupportedImageError(`engine picture (${type.mime}) cannot be decoded: ${reason}`);
  }
}
