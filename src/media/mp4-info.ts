/**
 * What an MP4 says about itself: the clip's duration for billing per second,
 * its size and frame rate to check an engine made what was asked, and which tracks it has.
 */
import {
  child,
  descend,
  handlerType,
  Mp4Error,
  type Mp4Node,
  need,
  readTopLevelBoxes,
  toNode,
} from "./mp4-boxes.ts";

/** Duration, picture size, frame rate and tracks of an MP4. */
export interface Mp4Info {
  /** From `mvhd`: the movie's duration, all tracks and edits included. */
  durationSeconds: number;
  /** Of the first video track (`tkhd`, 16.16 fixed point, rounded); 0 without video. */
  width: number;
  height: number;
  /** Frames per second of the first video track when every frame lasts the same; otherwise null. */
  fps: number | null;
  hasAudio: boolean;
  hasVideo: boolean;
}

/** Reads `moov`; throws Mp4Error for anything that is not a readable MP4. */
export function mp4Info(mp4: Buffer): Mp4Info {
  const moovBox = readTopLevelBoxes(mp4).find((b) => b.type === "moov");
  if (!moovBox) throw new Mp4Error("not an MP4: no moov box");
  const moov = toNode(moovBox);
  const traks = (moov.children ?? []).filter((c) => c.type === "trak");
  const video = traks.find((t) => handlerType(t) === "vide");
  const size = video ? trackSize(video) : { width: 0, height: 0 };
  return {
    durationSeconds: movieDuration(moov),
    ...size,
    fps: video ? frameRate(video) : null,
    hasAudio: traks.some((t) => handlerType(t) === "soun"),
    hasVideo: video !== undefined,
  };
}

function movieDuration(moov: Mp4Node): number {
  const mvhd = child(moov, "mvhd");
  if (!mvhd) throw new Mp4Error("bad MP4: moov without mvhd");
  const { timescale, duration } = timescaleAndDuration(mvhd);
  if (timescale === 0) throw new Mp4Error("bad MP4: mvhd timescale is 0");
  return duration / timescale;
}

function trackSize(trak: Mp4Node): { width: number; height: number } {
  const tkhd = child(trak, "tkhd");
  if (!tkhd) throw new Mp4Error("bad MP4: trak without tkhd");
  // version/flags, times and ids (20 or 32 bytes), then reserved, layer, group, volume, matrix
  const at = ((tkhd.data[0] ?? 0) === 1 ? 36 : 24) + 52;
  need(tkhd.data, at + 8, "tkhd");
  return {
    width: Math.round(tkhd.data.readUInt32BE(at) / 65536),
    height: Math.round(tkhd.data.readUInt32BE(at + 4) / 65536),
  };
}

function frameRate(trak: Mp4Node): number | null {
  const mdhd = descend(trak, "mdia", "mdhd");
  const stts = descend(trak, "mdia", "minf", "stbl", "stts");
  if (!mdhd || !stts) throw new Mp4Error("bad MP4: video track without mdhd or stts");
  const { timescale } = timescaleAndDuration(mdhd);
  need(stts.data, 8, "stts");
  const count = stts.data.readUInt32BE(4);
  need(stts.data, 8 + count * 8, "stts");
  let delta: number | undefined;
  for (let i = 0; i < count; i++) {
    const samples = stts.data.readUInt32BE(8 + i * 8);
    const d = stts.data.readUInt32BE(12 + i * 8);
    if (samples === 0) continue;
    if (delta !== undefined && d !== delta) return null;
    delta = d;
  }
  if (delta === undefined || delta === 0 || timescale === 0) return null;
  return timescale / delta;
}

// mvhd and mdhd share the layout up to the duration: version 1 has 64-bit times.
function timescaleAndDuration(box: Mp4Node): { timescale: number; duration: number } {
  const v1 = (box.data[0] ?? 0) === 1;
  need(box.data, v1 ? 32 : 20, box.type);
  const timescale = box.data.readUInt32BE(v1 ? 20 : 12);
  const duration = v1 ? Number(box.data.readBigUInt64BE(24)) : box.data.readUInt32BE(16);
  return { timescale, duration };
}
