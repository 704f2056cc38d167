import { Mp4Error, markMp4AsAi, stripMp4Audio } from "../../media/mp4-ai-mark.ts";
import { mp4Info } from "../../media/mp4-info.ts";

/** A clip ready to hand out, and what it is. */
export interface FinishedClip {
  mp4: Buffer;
  /** Whole seconds as billed: the clip's length rounded, never more than was asked for. */
  seconds: number;
  durationSeconds: number;
  fps: number | null;
  width: number;
  height: number;
  /** The engine's clip had a sound track, which was removed. */
  hadAudio: boolean;
}

/**
 * Turns an engine's MP4 into the clip Zona delivers: sound tracks removed,
 * marked as made by AI. Throws Mp4Error for a file that is not a readable MP4 with a picture.
 */
export function finishClip(engineMp4: Buffer, requestedSeconds: number): FinishedClip {
  const before = mp4Info(engineMp4);
  if (!before.hasVideo || before.durationSeconds <= 0) throw new Mp4Error("the clip has no picture");
  const mp4 = markMp4AsAi(stripMp4Audio(engineMp4));
  const info = mp4Info(mp4);
  return {
    mp4,
    seconds: Math.min(requestedSeconds, Math.max(1, Math.round(info.durationSeconds))),
    durationSeconds: info.durationSeconds,
    fps: info.fps,
    width: info.width,
    height: info.height,
    hadAudio: before.hasAudio,
  };
}
