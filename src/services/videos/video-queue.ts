/** The name of the queued step of a video job (its data: `{ id }`). */
export const VIDEO_JOB = "video";

/** What a video step carries through the queue. */
export interface VideoJobData {
  id: string;
}

/** The queue id of a video's job: one entry per video, however often it is queued (BullMQ refuses ids with ':'). */
export function videoQueueId(videoId: string): string {
  return `job-${videoId}`;
}
