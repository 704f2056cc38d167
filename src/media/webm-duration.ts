import { type FileHandle, open } from "node:fs/promises";

// Matroska element ids (with their length-marker bits, as they appear in the file).
const SEGMENT = 0x18538067;
const INFO = 0x1549a966;
const TIMECODE_SCALE = 0x2ad7b1;
const CLUSTER = 0x1f43b675;
const CLUSTER_TIMECODE = 0xe7;
const BLOCK_GROUP = 0xa0;
const BLOCK = 0xa1;
const SIMPLE_BLOCK = 0xa3;
const BLOCK_DURATION = 0x9b;
/** Elements whose children are walked; everything else is stepped over by its size. */
const CONTAINERS = new Set([SEGMENT, INFO, CLUSTER, BLOCK_GROUP]);
const DEFAULT_TIMECODE_SCALE_NS = 1_000_000;
const WINDOW_BYTES = 64 * 1024;

/**
 * Duration of a WebM whose header carries none, as browsers' MediaRecorder writes them (the
 * recorder cannot go back to fill it in): the span of the block timestamps, plus one frame.
 * Returns null when no block is found.
 */
export async function webmDurationFromBlocks(path: string): Promise<number | null> {
  const handle = await open(path, "r");
  try {
    const reader = new WindowReader(handle, (await handle.stat()).size);
    let scale = DEFAULT_TIMECODE_SCALE_NS;
    let clusterTime = 0;
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    let previousStart: number | undefined;
    let lastGap = 0;
    // Where blocks that state their duration end; most WebM blocks do not state one.
    let statedEnd = Number.NEGATIVE_INFINITY;
    let pos = 0;
    while (pos < reader.size) {
      const head = await reader.bytes(pos, 12);
      const id = readVint(head, 0, true);
      if (!id) break;
      const size = readVint(head, id.length, false);
      if (!size) break;
      const body = pos + id.length + size.length;
      if (CONTAINERS.has(id.value)) {
        pos = body;
        continue;
      }
      if (size.value < 0) break; // an unknown size is only legal on containers
      if (id.value === TIMECODE_SCALE) scale = readUint(await reader.bytes(body, size.value)) || scale;
      if (id.value === CLUSTER_TIMECODE) clusterTime = readUint(await reader.bytes(body, size.value));
      if (id.value === SIMPLE_BLOCK || id.value === BLOCK) {
        const block = await reader.bytes(body, 12);
        const track = readVint(block, 0, false);
        if (track && block.length >= track.length + 2) {
          const start = clusterTime + block.readInt16BE(track.length);
          if (previousStart !== undefined && start > previousStart) lastGap = start - previousStart;
          previousStart = start;
          first = Math.min(first, start);
          last = Math.max(last, start);
        }
      }
      if (id.value === BLOCK_DURATION && previousStart !== undefined) {
        statedEnd = Math.max(statedEnd, previousStart + readUint(await reader.bytes(body, size.value)));
      }
      pos = body + size.value;
    }
    if (!Number.isFinite(first)) return null;
    // The last frame lasts about as long as the gap before it.
    return ((Math.max(last + lastGap, statedEnd) - first) * scale) / 1e9;
  } finally {
    await handle.close();
  }
}

/** An EBML variable-length integer: ids keep their marker bits, sizes lose them (-1 = unknown). */
function readVint(
  buf: Buffer,
  at: number,
  keepMarker: boolean,
): { value: number; length: number } | undefined {
  const first = buf[at];
  if (first === undefined || first === 0) return undefined;
  const length = Math.clz32(first) - 23;
  if (at + length > buf.length) return undefined;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    const byte = buf[at + i] ?? 0;
    value = value * 256 + byte;
    allOnes &&= byte === 0xff;
  }
  return { value: !keepMarker && allOnes ? -1 : value, length };
}

function readUint(buf: Buffer): number {
  let value = 0;
  for (const byte of buf) value = value * 256 + byte;
  return value;
}

/** Small positioned reads served from one 64 KB window, so a walk costs a read per window. */
class WindowReader {
  readonly size: number;
  private readonly handle: FileHandle;
  private window = Buffer.alloc(WINDOW_BYTES);
  private start = 0;
  private length = 0;

  constructor(handle: FileHandle, size: number) {
    this.handle = handle;
    this.size = size;
  }

  async bytes(pos: number, count: number): Promise<Buffer> {
    const wanted = Math.min(count, WINDOW_BYTES);
    if (pos < this.start || pos + wanted > this.start + this.length) {
      const { bytesRead } = await this.handle.read(this.window, 0, WINDOW_BYTES, pos);
      this.start = pos;
      this.length = bytesRead;
    }
    const from = pos - this.start;
    return this.window.subarray(from, Math.min(from + wanted, this.length));
  }
}
