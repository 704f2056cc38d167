import { randomBytes } from "node:crypto";

const ID = /^video_[0-9a-f]{32}$/;

let last = 0;

/**
 * A new video id: `video_`, the creation time in milliseconds as 12 hex digits, then 80 random bits.
 * Ids sort as their creation times, so a page cursor (`after`) keeps its place even once the video
 * it names was deleted. Within a process they also sort in the order they were made: two in the
 * same millisecond (or under a stopped test clock) take the next millisecond.
 */
export function newVideoId(now: Date): string {
  last = Math.max(now.getTime(), last + 1);
  const time = last.toString(16).padStart(12, "0").slice(-12);
  return `video_${time}${randomBytes(10).toString("hex")}`;
}

/** Whether a string can be a video id; others are not looked up. */
export function isVideoId(value: string): boolean {
  return ID.test(value);
}
