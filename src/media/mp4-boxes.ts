/**
 * The ISO base media file format (MP4) as boxes: a strict walk of a buffer into boxes (32-bit
 * and 64-bit sizes, a size-0 box running to the end of the file), a tree of the containers in
 * `moov` that can be edited and written back, and the chunk offset tables (`stco`, `co64`) that
 * must follow the sample bytes when boxes before them change size.
 */

/** An MP4 that cannot be read: not ISO-BMFF, truncated, or a box whose size does not fit. */
export class Mp4Error extends Error {
  override name = "Mp4Error";
}

/** One box found in a buffer; offsets are relative to that buffer. */
export interface Mp4Box {
  /** Four characters, Latin-1 (so `©cmt` keeps its 0xA9 byte). */
  type: string;
  /** Where the box header starts. */
  start: number;
  /** 8, or 16 for a box with a 64-bit size. */
  headerSize: number;
  /** Header and payload together. */
  size: number;
  /** The header bytes as found, a view into the buffer. */
  header: Buffer;
  /** The payload, a view into the buffer (for `uuid` boxes it starts with the 16-byte user type). */
  data: Buffer;
  /** The size was written in the 64-bit field. */
  largeSize: boolean;
  /** The size was written as 0: the box runs to the end of the file. */
  toEnd: boolean;
}

/** A box of an editable tree: containers have children, the others keep their payload. */
export interface Mp4Node {
  type: string;
  /** Bytes between the header and the children of a container (version and flags of `meta`). */
  prefix: Buffer;
  /** The payload of a leaf; empty for a container. */
  data: Buffer;
  children?: Mp4Node[];
  /** Keep the 64-bit size field when writing, as the input had it. */
  largeSize?: boolean;
}

// Boxes that hold only boxes, in the parts of `moov` Zona edits or reads.
const CONTAINERS = new Set([
  "moov",
  "trak",
  "mdia",
  "minf",
  "stbl",
  "mvex",
  "udta",
  "meta",
  "ilst",
  "edts",
  "dinf",
]);
const MAX_DEPTH = 16;
const MAX_BOXES = 100_000;

/**
 * The boxes filling `buf` from `from` to `to`, each size checked against the bytes present.
 * A size of 0 is accepted only when `allowToEnd` (the last top-level box of a file).
 */
export function readBoxes(
  buf: Buffer,
  options: { from?: number; to?: number; allowToEnd?: boolean; where?: string } = {},
): Mp4Box[] {
  const from = options.from ?? 0;
  const to = options.to ?? buf.length;
  const where = options.where ?? "file";
  const boxes: Mp4Box[] = [];
  let offset = from;
  while (offset < to) {
    if (boxes.length >= MAX_BOXES) throw new Mp4Error(`bad MP4: more than ${MAX_BOXES} boxes in ${where}`);
    if (offset + 8 > to)
      throw new Mp4Error(`truncated MP4: box header expected at byte ${offset} of ${where}`);
    const size32 = buf.readUInt32BE(offset);
    const type = buf.toString("latin1", offset + 4, offset + 8);
    let headerSize = 8;
    let size = size32;
    let toEnd = false;
    if (size32 === 1) {
      if (offset + 16 > to) throw new Mp4Error(`truncated MP4: 64-bit size of ${type} at byte ${offset}`);
      const large = buf.readBigUInt64BE(offset + 8);
      if (large > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new Mp4Error(`bad MP4: box ${type} at byte ${offset} claims ${large} bytes`);
      }
      headerSize = 16;
      size = Number(large);
    } else if (size32 === 0) {
      if (!options.allowToEnd)
        throw new Mp4Error(`bad MP4: box ${type} at byte ${offset} of ${where} has size 0`);
      size = to - offset;
      toEnd = true;
    }
    if (size < headerSize) throw new Mp4Error(`bad MP4: box ${type} at byte ${offset} has size ${size}`);
    if (offset + size > to) {
      throw new Mp4Error(`truncated MP4: box ${type} at byte ${offset} of ${where} runs past the end`);
    }
    const data = buf.subarray(offset + headerSize, offset + size);
    const header = buf.subarray(offset, offset + headerSize);
    boxes.push({ type, start: offset, headerSize, size, header, data, largeSize: headerSize === 16, toEnd });
    offset += size;
  }
  return boxes;
}

/** The top-level boxes of a file; throws Mp4Error unless there is an `ftyp` and a `moov`. */
export function readTopLevelBoxes(mp4: Buffer): Mp4Box[] {
  if (mp4.length < 8 || !isBoxType(mp4.subarray(4, 8))) throw new Mp4Error("not an MP4: no box at the start");
  const boxes = readBoxes(mp4, { allowToEnd: true });
  if (!boxes.some((b) => b.type === "ftyp")) throw new Mp4Error("not an MP4: no ftyp box");
  const moovs = boxes.filter((b) => b.type === "moov");
  if (moovs.length === 0) throw new Mp4Error("not an MP4: no moov box");
  if (moovs.length > 1) throw new Mp4Error("bad MP4: more than one moov box");
  return boxes;
}

/** The box as an editable tree, descending into the known containers. */
export function toNode(box: Pick<Mp4Box, "type" | "data" | "largeSize">, depth = 0): Mp4Node {
  if (depth > MAX_DEPTH) throw new Mp4Error(`bad MP4: boxes nested deeper than ${MAX_DEPTH}`);
  if (!CONTAINERS.has(box.type))
    return { type: box.type, prefix: EMPTY, data: box.data, largeSize: box.largeSize };
  const prefixLength = box.type === "meta" ? metaPrefixLength(box.data) : 0;
  need(box.data, prefixLength, box.type);
  const children = readBoxes(box.data, { from: prefixLength, where: box.type }).map((b) =>
    toNode(b, depth + 1),
  );
  return {
    type: box.type,
    prefix: box.data.subarray(0, prefixLength),
    data: EMPTY,
    children,
    largeSize: box.largeSize,
  };
}

/** The bytes of a node and everything under it. */
export function writeNode(node: Mp4Node): Buffer {
  const parts = node.children ? [node.prefix, ...node.children.map(writeNode)] : [node.data];
  return encodeBox(node.type, parts, { largeSize: node.largeSize });
}

/** The size in bytes `writeNode` gives, without writing. */
export function nodeSize(node: Mp4Node): number {
  const payload = node.children
    ? node.prefix.length + node.children.reduce((sum, c) => sum + nodeSize(c), 0)
    : node.data.length;
  return headerSizeFor(payload, node.largeSize) + payload;
}

/** A box with this type and payload; the 64-bit size is used when asked or when 32 bits are too few. */
export function encodeBox(
  type: string,
  payload: Buffer | readonly Buffer[],
  options: { largeSize?: boolean } = {},
): Buffer {
  const parts = Buffer.isBuffer(payload) ? [payload] : payload;
  const length = parts.reduce((sum, p) => sum + p.length, 0);
  const header = boxHeader(type, length, options.largeSize);
  return Buffer.concat([header, ...parts]);
}

/** The first child of this type, or undefined. */
export function child(node: Mp4Node | undefined, type: string): Mp4Node | undefined {
  return node?.children?.find((c) => c.type === type);
}

/** The node reached by following child types, or undefined. */
export function descend(node: Mp4Node | undefined, ...path: string[]): Mp4Node | undefined {
  let at = node;
  for (const type of path) at = child(at, type);
  return at;
}

/** The handler type (`vide`, `soun`, ...) of a `trak`, from `mdia/hdlr`. */
export function handlerType(trak: Mp4Node): string | undefined {
  const hdlr = descend(trak, "mdia", "hdlr");
  if (!hdlr) return undefined;
  if (hdlr.data.length < 12) throw new Mp4Error("truncated MP4: hdlr box too short");
  return hdlr.data.toString("latin1", 8, 12);
}

/** The track_ID of a `trak`, from `tkhd`. */
export function trackId(trak: Mp4Node): number {
  const tkhd = child(trak, "tkhd");
  if (!tkhd) throw new Mp4Error("bad MP4: trak without tkhd");
  const at = (tkhd.data[0] ?? 0) === 1 ? 20 : 12;
  need(tkhd.data, at + 4, "tkhd");
  return tkhd.data.readUInt32BE(at);
}

/** Every `stco` and `co64` box under a node. */
export function chunkOffsetBoxes(node: Mp4Node): Mp4Node[] {
  if (node.type === "stco" || node.type === "co64") return [node];
  return (node.children ?? []).flatMap(chunkOffsetBoxes);
}

/** The offsets of a `stco` or `co64` box. */
export function readChunkOffsets(box: Pick<Mp4Node, "type" | "data">): number[] {
  const width = box.type === "co64" ? 8 : 4;
  need(box.data, 8, box.type);
  const count = box.data.readUInt32BE(4);
  need(box.data, 8 + count * width, box.type);
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const at = 8 + i * width;
    out.push(width === 8 ? Number(box.data.readBigUInt64BE(at)) : box.data.readUInt32BE(at));
  }
  return out;
}

/** Rewrites every offset of a `stco` or `co64` node in place (on a copy of its payload). */
export function mapChunkOffsets(box: Mp4Node, map: (offset: number) => number): void {
  const offsets = readChunkOffsets(box);
  const data = Buffer.from(box.data);
  offsets.forEach((offset, i) => {
    const moved = map(offset);
    if (box.type === "co64") data.writeBigUInt64BE(BigInt(moved), 8 + i * 8);
    else if (moved > 0xffffffff) throw new Mp4Error(`chunk offset ${moved} does not fit in stco`);
    else data.writeUInt32BE(moved, 8 + i * 4);
  });
  box.data = data;
}

/** Throws a truncation Mp4Error unless `data` has at least `length` bytes. */
export function need(data: Buffer, length: number, what: string): void {
  if (data.length < length) throw new Mp4Error(`truncated MP4: ${what} box too short`);
}

const EMPTY = Buffer.alloc(0);

/** The 8-byte header of a box, or 16 bytes with the 64-bit size when asked or needed. */
export function boxHeader(type: string, payloadLength: number, largeSize = false): Buffer {
  const typeBytes = Buffer.from(type, "latin1");
  if (typeBytes.length !== 4 || type.length !== 4) throw new Mp4Error(`invalid MP4 box type "${type}"`);
  const headerSize = headerSizeFor(payloadLength, largeSize);
  const header = Buffer.alloc(headerSize);
  if (headerSize === 16) {
    header.writeUInt32BE(1, 0);
    header.writeBigUInt64BE(BigInt(headerSize + payloadLength), 8);
  } else {
    header.writeUInt32BE(headerSize + payloadLength, 0);
  }
  typeBytes.copy(header, 4);
  return header;
}

function headerSizeFor(payloadLength: number, largeSize = false): number {
  return largeSize || payloadLength + 8 > 0xffffffff ? 16 : 8;
}

// ISO `meta` is a full box (version and flags first); QuickTime's is not: then `hdlr` comes at once.
function metaPrefixLength(data: Buffer): number {
  return data.length >= 8 && data.toString("latin1", 4, 8) === "hdlr" ? 0 : 4;
}

function isBoxType(bytes: Buffer): boolean {
  return bytes.every((b) => b >= 0x20 && b <= 0x7e);
}

/** How `rebuildMp4` changes the top-level boxes besides replacing `moov`. */
export interface Mp4Rebuild {
  /** Top-level boxes to leave out (never `moov` or the box holding the samples). */
  drop?: (box: Mp4Box) => boolean;
  /** Boxes (already encoded) to add at the end of the file, where they move no sample. */
  append?: readonly Buffer[];
}

/**
 * The file with `moov` replaced by this tree and the top-level boxes changed as asked. Every
 * chunk offset in the new `moov` is moved by how far the box holding its bytes moved, so a
 * `moov` that grows or shrinks before `mdat` (faststart) keeps pointing at the same samples.
 */
export function rebuildMp4(boxes: readonly Mp4Box[], moov: Mp4Node, rebuild: Mp4Rebuild = {}): Buffer {
  const kept = boxes.filter((b) => b.type === "moov" || !rebuild.drop?.(b));
  const append = rebuild.append ?? [];
  const parts: Buffer[] = [];
  const moved: { from: number; to: number; shift: number }[] = [];
  let position = 0;
  let moovAt = -1;
  kept.forEach((box, i) => {
    if (box.type === "moov") {
      moovAt = parts.length;
      parts.push(EMPTY);
      position += nodeSize(moov);
      return;
    }
    const stillLast = i === kept.length - 1 && append.length === 0;
    // A size-0 box is only valid last; once something follows it, it gets its real size.
    const head = box.toEnd && !stillLast ? boxHeader(box.type, box.data.length) : box.header;
    moved.push({
      from: box.start + box.headerSize,
      to: box.start + box.size,
      shift: position + head.length - (box.start + box.headerSize),
    });
    parts.push(head, box.data);
    position += head.length + box.data.length;
  });
  for (const table of chunkOffsetBoxes(moov)) {
    mapChunkOffsets(table, (offset) => {
      const range = moved.find((r) => offset >= r.from && offset < r.to);
      if (!range) throw new Mp4Error(`bad MP4: chunk offset ${offset} points outside the sample data`);
      return offset + range.shift;
    });
  }
  parts[moovAt] = writeNode(moov);
  return Buffer.concat([...parts, ...append]);
}
