/**
 * The PNG container: splitting a file into its chunks (checking signature, lengths and CRC-32),
 * writing chunks back, and the text chunks (tEXt, uncompressed iTXt) that carry metadata.
 */
import { crc32 } from "node:zlib";

/** A PNG that cannot be read: wrong signature, truncated, bad CRC or chunks out of order. */
export class PngError extends Error {
  override name = "PngError";
}

/** One chunk of a PNG: its four-letter type and its data (length and CRC are derived). */
export interface PngChunk {
  type: string;
  data: Buffer;
}

/** The eight bytes every PNG starts with. */
export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const MAX_CHUNK_LENGTH = 0x7fffffff;
const IHDR_LENGTH = 13;
const MAX_KEYWORD_LENGTH = 79;

/** Whether the bytes start with the PNG signature. */
export function hasPngSignature(data: Buffer): boolean {
  return data.length >= PNG_SIGNATURE.length && data.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE);
}

/**
 * The chunks of a PNG, IHDR first and IEND last, every CRC checked. Bytes after IEND are not
 * part of the image and are dropped, so nothing hidden there survives a rewrite.
 */
export function readPngChunks(png: Buffer): PngChunk[] {
  if (!hasPngSignature(png)) throw new PngError("not a PNG: the signature is missing");
  const chunks: PngChunk[] = [];
  let offset = PNG_SIGNATURE.length;
  for (;;) {
    if (offset + 8 > png.length) throw new PngError(`truncated PNG: chunk header expected at byte ${offset}`);
    const length = png.readUInt32BE(offset);
    if (length > MAX_CHUNK_LENGTH) throw new PngError(`bad PNG: chunk length ${length} at byte ${offset}`);
    const typeBytes = png.subarray(offset + 4, offset + 8);
    if (!typeBytes.every(isAsciiLetter)) throw new PngError(`bad PNG: invalid chunk type at byte ${offset}`);
    const type = typeBytes.toString("latin1");
    const end = offset + 12 + length;
    if (end > png.length)
      throw new PngError(`truncated PNG: chunk ${type} at byte ${offset} runs past the end`);
    const data = png.subarray(offset + 8, offset + 8 + length);
    const stored = png.readUInt32BE(offset + 8 + length);
    if (crc32(data, crc32(typeBytes)) !== stored) {
      throw new PngError(`bad PNG: CRC mismatch in chunk ${type} at byte ${offset}`);
    }
    if (chunks.length === 0 && (type !== "IHDR" || length !== IHDR_LENGTH)) {
      throw new PngError("bad PNG: the first chunk is not a 13-byte IHDR");
    }
    chunks.push({ type, data });
    offset = end;
    if (type === "IEND") break;
  }
  if (!chunks.some((c) => c.type === "IDAT")) throw new PngError("bad PNG: no IDAT chunk");
  return chunks;
}

/** A PNG file made of the signature and these chunks, each with its length and CRC-32. */
export function writePngChunks(chunks: readonly PngChunk[]): Buffer {
  const parts: Buffer[] = [PNG_SIGNATURE];
  for (const chunk of chunks) parts.push(encodePngChunk(chunk));
  return Buffer.concat(parts);
}

/** One chunk as bytes: length, type, data, CRC-32 of type and data. */
export function encodePngChunk(chunk: PngChunk): Buffer {
  const typeBytes = Buffer.from(chunk.type, "latin1");
  if (typeBytes.length !== 4 || !typeBytes.every(isAsciiLetter)) {
    throw new PngError(`invalid PNG chunk type "${chunk.type}"`);
  }
  const out = Buffer.alloc(12 + chunk.data.length);
  out.writeUInt32BE(chunk.data.length, 0);
  typeBytes.copy(out, 4);
  chunk.data.copy(out, 8);
  out.writeUInt32BE(crc32(chunk.data, crc32(typeBytes)), 8 + chunk.data.length);
  return out;
}

/** The chunks with `added` placed right before the first IDAT. */
export function insertBeforeIdat(chunks: readonly PngChunk[], added: readonly PngChunk[]): PngChunk[] {
  const at = chunks.findIndex((c) => c.type === "IDAT");
  if (at < 0) throw new PngError("bad PNG: no IDAT chunk");
  return [...chunks.slice(0, at), ...added, ...chunks.slice(at)];
}

/** Width and height in pixels, from IHDR. */
export function pngSize(png: Buffer): { width: number; height: number } {
  const ihdr = readPngChunks(png)[0];
  if (!ihdr) throw new PngError("bad PNG: no IHDR");
  return { width: ihdr.data.readUInt32BE(0), height: ihdr.data.readUInt32BE(4) };
}

/** A tEXt chunk (Latin-1), or an uncompressed iTXt chunk (UTF-8) when the text is not Latin-1. */
export function textChunk(keyword: string, text: string): PngChunk {
  const key = keywordBytes(keyword);
  if (isLatin1(text)) {
    return { type: "tEXt", data: Buffer.concat([key, Buffer.from([0]), Buffer.from(text, "latin1")]) };
  }
  return itxtChunk(keyword, text);
}

/** An uncompressed iTXt chunk with no language tag and no translated keyword. */
export function itxtChunk(keyword: string, text: string): PngChunk {
  // keyword NUL, compression flag 0, method 0, empty language tag NUL, empty translation NUL
  const header = Buffer.from([0, 0, 0, 0, 0]);
  return { type: "iTXt", data: Buffer.concat([keywordBytes(keyword), header, Buffer.from(text, "utf8")]) };
}

/** A tEXt chunk before the first IDAT (the fake engines imitate ComfyUI's prompt chunks this way). */
export function writePngText(png: Buffer, keyword: string, text: string): Buffer {
  return writePngChunks(insertBeforeIdat(readPngChunks(png), [textChunk(keyword, text)]));
}

/** Keyword to text of every tEXt and uncompressed iTXt chunk; compressed text is skipped. */
export function readPngText(png: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  for (const chunk of readPngChunks(png)) {
    const entry = decodeTextChunk(chunk);
    if (entry) out[entry.keyword] = entry.text;
  }
  return out;
}

/** The keyword and text of a tEXt or uncompressed iTXt chunk, or undefined for anything else. */
export function decodeTextChunk(chunk: PngChunk): { keyword: string; text: string } | undefined {
  const nul = chunk.data.indexOf(0);
  if (nul < 1) return undefined;
  const keyword = chunk.data.subarray(0, nul).toString("latin1");
  if (chunk.type === "tEXt") return { keyword, text: chunk.data.subarray(nul + 1).toString("latin1") };
  if (chunk.type !== "iTXt") return undefined;
  if (chunk.data[nul + 1] !== 0) return undefined;
  const langEnd = chunk.data.indexOf(0, nul + 3);
  if (langEnd < 0) return undefined;
  const translatedEnd = chunk.data.indexOf(0, langEnd + 1);
  if (translatedEnd < 0) return undefined;
  return { keyword, text: chunk.data.subarray(translatedEnd + 1).toString("utf8") };
}

function keywordBytes(keyword: string): Buffer {
  if (
    keyword.length < 1 ||
    keyword.length > MAX_KEYWORD_LENGTH ||
    !isLatin1(keyword) ||
    keyword.includes("\0")
  ) {
    throw new PngError(`invalid PNG text keyword "${keyword}": 1 to 79 Latin-1 characters, no NUL`);
  }
  return Buffer.from(keyword, "latin1");
}

function isLatin1(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0xff) return false;
  return true;
}

function isAsciiLetter(byte: number): boolean {
  return (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
}
