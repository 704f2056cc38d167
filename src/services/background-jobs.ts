import type { JobDefinition } from "../jobs/job-definition.ts";
import { TITLE_JOB, type TitleJobData } from "./chat/title-job.ts";
import { INGEST_JOB, type IngestJobData } from "./knowledge/ingest-queue.ts";
import type { Services } from "./services.ts";
import { VIDEO_JOB, type VideoJobData } from "./videos/video-queue.ts";

/**
 * Every kind of background job, each run by the services in force when it runs (a configuration
 * reload reaches the next run): video jobs, one step per run; the reading of uploaded documents;
 * the automatic titles of conversations.
 */
export function backgroundJobs(
  services: Services,
): [JobDefinition<VideoJobData>, JobDefinition<IngestJobData>, JobDefinition<TitleJobData>] {
  return [
    {
      name: VIDEO_JOB,
      queue: "durable",
      step: (data, signal) => services.videoRunner.step(data.id, signal),
      onGaveUp: (data, deaths) => services.videoRunner.givenUp(data.id, deaths),
      upkeep: services.videoUpkeep,
    },
    {
      name: INGEST_JOB,
      queue: "durable",
      step: (data, signal) => services.kbIngest.step(data.id, signal),
      onGaveUp: (data, deaths) => services.knowledgeBases.readingGivenUp(data.id, deaths),
      upkeep: services.kbUpkeep,
    },
    {
      name: TITLE_JOB,
      queue: "throwaway",
      step: (data, signal) => services.chat.titles.write(data, signal),
      onGaveUp: (data) => services.chat.titles.givenUp(data),
      upkeep: services.titleUpkeep,
    },
  ];
}

/** Makes this process run every kind of background job, and starts their upkeeps. */
export function startBackgroundJobs(services: Services): void {
  const [videos, documents, titles] = backgroundJobs(services);
  start(services, videos);
  start(services, documents);
  start(services, titles);
}

function start<T>(services: Services, job: JobDefinition<T>): void {
  const queue = job.queue === "durable" ? services.durableJobs : services.jobs;
  queue.work<T>(job.name, job.step, job.onGaveUp ? { onGaveUp: job.onGaveUp } : {});
  job.upkeep?.start();
}
