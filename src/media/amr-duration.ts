import { open } from "node:fs/promises";

// Bytes of one stored frame (table-of-contents byte included) by frame type, from RFC 4867 §5.3.
const NB_FRAME_BYTES = [13, 14, 16, 18, 20, 21, 27, 32, 6, 1, 1, 1, 1, 1, 1, 1];
const WB_FRAME_BYTES = [18, 24, 33, 37, 41, 47, 51, 59, 61, 6, 1, 1, 1, 1, 1, 1];
const NB_MAGIC = "#!AMR\n";
const WB_MAGIC = "#!AMR-WB\n";
const FRAME_SECONDS = 0.02;
const READ_BLOCK_BYTES = 64 * 1024;

/**
 * Duration of a raw AMR-NB or AMR-WB file (RFC 4867 storage format), which music-metadata cannot
 * read: every frame is 20 ms and its size follows from its first byte, so the frames are counted.
 * Returns null for anything else (including multi-channel AMR).
 */
export async function amrDurationSeconds(path: string): Promise<number | null> {
  const handle = await open(path, "r");
  try {
    const block = Buffer.alloc(READ_BLOCK_BYTES);
    const { bytesRead: headRead } = await handle.read(block, 0, WB_MAGIC.length, 0);
    const head = block.toString("latin1", 0, headRead);
    const [sizes, magic] = head.startsWith(WB_MAGIC)
      ? [WB_FRAME_BYTES, WB_MAGIC]
      : head.startsWith(NB_MAGIC)
        ? [NB_FRAME_BYTES, NB_MAGIC]
        : [undefined, ""];
    if (!sizes) return null;

    let frames = 0;
    // Offset of the next frame's first byte, which may fall in a later block than the one read.
    let next = magic.length;
    let blockStart = next;
    for (;;) {
      const { bytesRead } = await handle.read(block, 0, block.length, blockStart);
      if (bytesRead === 0) break;
      while (next < blockStart + bytesRead) {
        const toc = block[next - blockStart] ?? 0;
        next += sizes[(toc >> 3) & 0x0f] ?? 1;
        frames++;
      }
      blockStart += bytesRead;
      if (bytesRead < block.length) break;
    }
    return frames * FRAME_SECONDS;
  } finally {
    await handle.close();
  }
}
