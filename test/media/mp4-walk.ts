/**
 * An independent, minimal MP4 box walk for the tests (not the code under test), and variants of
 * the ffmpeg fixtures built by rewriting boxes: co64 instead of stco, a 64-bit mdat size, a
 * size-0 mdat, no udta.
 */
import { expect } from "vitest";

export interface Box {
  type: string;
  start: number;
  header: number;
  size: number;
}
export const CONTAINERS = new Set([
  "moov",
  "trak",
  "mdia",
  "minf",
  "stbl",
  "udta",
  "meta",
  "ilst",
  "edts",
  "dinf",
]);

export function walk(buf: Buffer, from = 0, to = buf.length): Box[] {
  const out: Box[] = [];
  let at = from;
  while (at < to) {
    let size = buf.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      size = Number(buf.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) {
      size = to - at;
    }
    expect(size).toBeGreaterThanOrEqual(header);
    out.push({ type: buf.toString("latin1", at + 4, at + 8), start: at, header, size });
    at += size;
  }
  expect(at).toBe(to);
  return out;
}

export function kids(buf: Buffer, box: Box): Box[] {
  const prefix = box.type === "meta" ? 4 : 0;
  return walk(buf, box.start + box.header + prefix, box.start + box.size);
}

export function find(buf: Buffer, ...path: string[]): Box | undefined {
  let boxes = walk(buf);
  let found: Box | undefined;
  for (const type of path) {
    found = boxes.find((b) => b.type === type);
    if (!found) return undefined;
    boxes = CONTAINERS.has(type) ? kids(buf, found) : [];
  }
  return found;
}

export function body(buf: Buffer, box: Box): Buffer {
  return buf.subarray(box.start + box.header, box.start + box.size);
}

export function traks(mp4: Buffer): Box[] {
  const moov = find(mp4, "moov");
  return moov ? kids(mp4, moov).filter((b) => b.type === "trak") : [];
}

export function under(mp4: Buffer, box: Box, ...path: string[]): Box {
  let at = box;
  for (const type of path) {
    const next = kids(mp4, at).find((b) => b.type === type);
    if (!next) throw new Error(`no ${type} under ${at.type}`);
    at = next;
  }
  return at;
}

export function handler(mp4: Buffer, trak: Box): string {
  return body(mp4, under(mp4, trak, "mdia", "hdlr")).toString("latin1", 8, 12);
}

/** Chunk offsets of the track with this handler, from stco or co64. */
export function chunkOffsets(mp4: Buffer, kind: string): number[] {
  const trak = traks(mp4).find((t) => handler(mp4, t) === kind);
  if (!trak) throw new Error(`no ${kind} track`);
  const stbl = under(mp4, trak, "mdia", "minf", "stbl");
  const table = kids(mp4, stbl).find((b) => b.type === "stco" || b.type === "co64");
  if (!table) throw new Error("no chunk offsets");
  const data = body(mp4, table);
  const wide = table.type === "co64";
  return Array.from({ length: data.readUInt32BE(4) }, (_, i) =>
    wide ? Number(data.readBigUInt64BE(8 + i * 8)) : data.readUInt32BE(8 + i * 4),
  );
}

/** The bytes of every chunk of a track, found through stco/co64, stsc and stsz. */
export function chunkBytes(mp4: Buffer, kind: string): Buffer[] {
  const trak = traks(mp4).find((t) => handler(mp4, t) === kind);
  if (!trak) throw new Error(`no ${kind} track`);
  const stbl = under(mp4, trak, "mdia", "minf", "stbl");
  const stsz = body(mp4, under(mp4, stbl, "stsz"));
  const stsc = body(mp4, under(mp4, stbl, "stsc"));
  const fixed = stsz.readUInt32BE(4);
  const sampleSize = (i: number) => fixed || stsz.readUInt32BE(12 + i * 4);
  const runs = Array.from({ length: stsc.readUInt32BE(4) }, (_, i) => ({
    first: stsc.readUInt32BE(8 + i * 12),
    perChunk: stsc.readUInt32BE(12 + i * 12),
  }));
  let sample = 0;
  return chunkOffsets(mp4, kind).map((offset, i) => {
    const perChunk = runs.filter((r) => r.first <= i + 1).at(-1)?.perChunk ?? 0;
    let length = 0;
    for (let s = 0; s < perChunk; s++) length += sampleSize(sample++);
    expect(offset + length).toBeLessThanOrEqual(mp4.length);
    return mp4.subarray(offset, offset + length);
  });
}

export function expectSameVideoSamples(before: Buffer, after: Buffer): void {
  const a = chunkBytes(before, "vide");
  const b = chunkBytes(after, "vide");
  expect(b.length).toBe(a.length);
  expect(a.length).toBeGreaterThan(0);
  expect(Buffer.concat(b).equals(Buffer.concat(a))).toBe(true);
  b.forEach((chunk, i) => {
    expect(chunk.equals(a[i] ?? Buffer.alloc(0))).toBe(true);
  });
}

export function moovFirst(mp4: Buffer): boolean {
  const types = walk(mp4).map((b) => b.type);
  return types.indexOf("moov") < types.indexOf("mdat");
}

export function header(type: string, payload: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeUInt32BE(payload + 8, 0);
  out.write(type, 4, "latin1");
  return out;
}

/** The file with boxes rewritten by `edit` (container sizes recomputed); no offset is touched. */
export function rewrite(mp4: Buffer, edit: (box: Box) => Buffer | undefined): Buffer {
  const one = (box: Box): Buffer => {
    const replaced = edit(box);
    if (replaced) return replaced;
    if (!CONTAINERS.has(box.type)) return mp4.subarray(box.start, box.start + box.size);
    const prefix = mp4.subarray(
      box.start + box.header,
      box.start + box.header + (box.type === "meta" ? 4 : 0),
    );
    const inner = Buffer.concat([prefix, ...kids(mp4, box).map(one)]);
    return Buffer.concat([header(box.type, inner.length), inner]);
  };
  return Buffer.concat(walk(mp4).map(one));
}

/** Every stco turned into co64 (as files over 4 GiB have), offsets moved when moov comes first. */
export function withCo64(mp4: Buffer): Buffer {
  let growth = 0;
  rewrite(mp4, (box) => {
    if (box.type === "stco") growth += 4 * body(mp4, box).readUInt32BE(4);
    return undefined;
  });
  const shift = moovFirst(mp4) ? growth : 0;
  return rewrite(mp4, (box) => {
    if (box.type !== "stco") return undefined;
    const data = body(mp4, box);
    const count = data.readUInt32BE(4);
    const out = Buffer.alloc(8 + count * 8);
    data.copy(out, 0, 0, 8);
    for (let i = 0; i < count; i++)
      out.writeBigUInt64BE(BigInt(data.readUInt32BE(8 + i * 4) + shift), 8 + i * 8);
    return Buffer.concat([header("co64", out.length), out]);
  });
}

/** ffmpeg's 8-byte `free` before `mdat` used for a 64-bit mdat size, as ffmpeg does past 4 GiB. */
export function withLargeMdat(mp4: Buffer): Buffer {
  const boxes = walk(mp4);
  const at = boxes.findIndex((b) => b.type === "free" && b.size === 8);
  const free = boxes[at];
  const mdat = boxes[at + 1];
  if (!free || mdat?.type !== "mdat") throw new Error("fixture without free before mdat");
  const large = Buffer.alloc(16);
  large.writeUInt32BE(1, 0);
  large.write("mdat", 4, "latin1");
  large.writeBigUInt64BE(BigInt(mdat.size + 8), 8);
  return Buffer.concat([mp4.subarray(0, free.start), large, mp4.subarray(mdat.start + 8)]);
}

/** A faststart file whose last box, mdat, has size 0 ("to the end of the file"). */
export function withSizeZeroMdat(mp4: Buffer): Buffer {
  const mdat = walk(mp4).at(-1);
  if (mdat?.type !== "mdat") throw new Error("mdat is not last");
  const out = Buffer.from(mp4);
  out.writeUInt32BE(0, mdat.start);
  return out;
}

/** A moov-last file without moov/udta, so marking has to create udta/meta/hdlr/ilst. */
export function withoutUdta(mp4: Buffer): Buffer {
  expect(moovFirst(mp4)).toBe(false);
  return rewrite(mp4, (box) => (box.type === "udta" ? Buffer.alloc(0) : undefined));
}
