import type { FileHandle } from "node:fs/promises";
import { promisify } from "node:util";
import { inflateRaw } from "node:zlib";

const inflateRawAsync = promisify(inflateRaw);

/** One file inside a ZIP archive, as its central directory describes it. */
export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated; anything else is refused by the Word reader anyway. */
  method: number;
  /** Bit 0 set: the entry is encrypted. */
  flags: number;
  compressedSize: number;
  /** As declared: a zip bomb may lie here, so unpackedSize() inflates to find out. */
  declaredSize: number;
  localHeaderOffset: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL_HEADER = 0x02014b50;
const LOCAL_HEADER = 0x04034b50;
const MAX_U32 = 0xffffffff;

/** Whether the bytes start like a ZIP archive (a local file header). */
export function looksLikeZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 3 && bytes[3] === 4;
}

/**
 * The entries of a ZIP archive read from its central directory, or undefined when there is no
 * readable directory (a truncated or damaged archive). Reads names and sizes only: nothing is
 * unpacked, so this is safe on any input.
 */
export function readZipDirectory(bytes: Buffer): ZipEntry[] | undefined {
  const end = findEndOfDirectory(bytes);
  if (end === undefined) return undefined;
  let count = bytes.readUInt16LE(end + 10);
  let offset = bytes.readUInt32LE(end + 16);
  if (offset === MAX_U32 || count === 0xffff) {
    const zip64 = zip64Directory(bytes, end);
    if (!zip64) return undefined;
    ({ count, offset } = zip64);
  }
  return parseDirectory(bytes, offset, count);
}

/** Most bytes of central directory read from a file: thousands of entries, far more than any DOCX has. */
const MAX_DIRECTORY_BYTES = 16 * 1024 * 1024;

/**
 * readZipDirectory for a file on disk, reading only its end and its directory (never the whole
 * file): how an upload is judged without holding it in memory.
 */
export async function readZipDirectoryOfFile(
  file: FileHandle,
  size: number,
): Promise<ZipEntry[] | undefined> {
  const read = async (at: number, length: number): Promise<Buffer> => {
    const buffer = Buffer.alloc(Math.max(0, Math.min(length, size - at)));
    const { bytesRead } = await file.read(buffer, 0, buffer.length, at);
    return buffer.subarray(0, bytesRead);
  };
  const tailStart = Math.max(0, size - 22 - 0xffff - 20);
  const tail = await read(tailStart, size - tailStart);
  const end = findEndOfDirectory(tail);
  if (end === undefined) return undefined;
  let count = tail.readUInt16LE(end + 10);
  let length = tail.readUInt32LE(end + 12);
  let offset = tail.readUInt32LE(end + 16);
  if (offset === MAX_U32 || count === 0xffff || length === MAX_U32) {
    const locator = end - 20;
    if (locator < 0 || tail.readUInt32LE(locator) !== ZIP64_LOCATOR) return undefined;
    const record = await read(Number(tail.readBigUInt64LE(locator + 8)), 56);
    if (record.length < 56 || record.readUInt32LE(0) !== ZIP64_EOCD) return undefined;
    count = Number(record.readBigUInt64LE(32));
    length = Number(record.readBigUInt64LE(40));
    offset = Number(record.readBigUInt64LE(48));
  }
  if (length > MAX_DIRECTORY_BYTES || offset + length > size) return undefined;
  return parseDirectory(await read(offset, length), 0, count);
}

function parseDirectory(bytes: Buffer, start: number, count: number): ZipEntry[] | undefined {
  let offset = start;
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (offset + 46 > bytes.length || bytes.readUInt32LE(offset) !== CENTRAL_HEADER) return undefined;
    const nameLength = bytes.readUInt16LE(offset + 28);
    const extraLength = bytes.readUInt16LE(offset + 30);
    const commentLength = bytes.readUInt16LE(offset + 32);
    const next = offset + 46 + nameLength + extraLength + commentLength;
    if (next > bytes.length) return undefined;
    const flags = bytes.readUInt16LE(offset + 8);
    // Bit 11: the name is UTF-8; otherwise CP437, whose ASCII part is all a DOCX uses.
    const name = bytes.toString(flags & 0x800 ? "utf8" : "latin1", offset + 46, offset + 46 + nameLength);
    const entry: ZipEntry = {
      name,
      method: bytes.readUInt16LE(offset + 10),
      flags,
      compressedSize: bytes.readUInt32LE(offset + 20),
      declaredSize: bytes.readUInt32LE(offset + 24),
      localHeaderOffset: bytes.readUInt32LE(offset + 42),
    };
    applyZip64Extra(entry, bytes.subarray(offset + 46 + nameLength, offset + 46 + nameLength + extraLength));
    entries.push(entry);
    offset = next;
  }
  return entries;
}

/**
 * How many bytes the entry really unpacks to, found by inflating it (not trusting the declared
 * size), or undefined as soon as that passes `max`. Inflates off the main thread and keeps at most
 * `max` bytes in memory. Throws on damaged data.
 */
export async function unpackedSize(bytes: Buffer, entry: ZipEntry, max: number): Promise<number | undefined> {
  const data = entryData(bytes, entry);
  if (entry.method === 0) return data.length <= max ? data.length : undefined;
  if (entry.method !== 8) throw new Error(`unsupported compression method ${entry.method}`);
  try {
    const out = await inflateRawAsync(data, { maxOutputLength: Math.max(1, max) });
    return out.length <= max ? out.length : undefined;
  } catch (error) {
    if ((error as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") return undefined;
    throw error;
  }
}

function entryData(bytes: Buffer, entry: ZipEntry): Buffer {
  const at = entry.localHeaderOffset;
  if (at + 30 > bytes.length || bytes.readUInt32LE(at) !== LOCAL_HEADER) throw new Error("bad local header");
  const start = at + 30 + bytes.readUInt16LE(at + 26) + bytes.readUInt16LE(at + 28);
  if (start + entry.compressedSize > bytes.length) throw new Error("entry runs past the end of the file");
  return bytes.subarray(start, start + entry.compressedSize);
}

function findEndOfDirectory(bytes: Buffer): number | undefined {
  // The record is 22 bytes plus a comment of at most 65,535 bytes, at the very end.
  const lowest = Math.max(0, bytes.length - 22 - 0xffff);
  for (let at = bytes.length - 22; at >= lowest; at--) {
    if (bytes.readUInt32LE(at) === EOCD) return at;
  }
  return undefined;
}

function zip64Directory(bytes: Buffer, end: number): { count: number; offset: number } | undefined {
  const locator = end - 20;
  if (locator < 0 || bytes.readUInt32LE(locator) !== ZIP64_LOCATOR) return undefined;
  const record = Number(bytes.readBigUInt64LE(locator + 8));
  if (record + 56 > bytes.length || bytes.readUInt32LE(record) !== ZIP64_EOCD) return undefined;
  return {
    count: Number(bytes.readBigUInt64LE(record + 32)),
    offset: Number(bytes.readBigUInt64LE(record + 48)),
  };
}

/** Sizes and offsets too big for 32 bits sit in the ZIP64 extra field, in this order. */
function applyZip64Extra(entry: ZipEntry, extra: Buffer): void {
  for (let at = 0; at + 4 <= extra.length; ) {
    const id = extra.readUInt16LE(at);
    const size = extra.readUInt16LE(at + 2);
    if (id === 0x0001) {
      let field = at + 4;
      const next = (): number | undefined => {
        if (field + 8 > at + 4 + size || field + 8 > extra.length) return undefined;
        const value = Number(extra.readBigUInt64LE(field));
        field += 8;
        return value;
      };
      if (entry.declaredSize === MAX_U32) entry.declaredSize = next() ?? entry.declaredSize;
      if (entry.compressedSize === MAX_U32) entry.compressedSize = next() ?? entry.compressedSize;
      if (entry.localHeaderOffset === MAX_U32) entry.localHeaderOffset = next() ?? entry.localHeaderOffset;
      return;
    }
    at += 4 + size;
  }
}
