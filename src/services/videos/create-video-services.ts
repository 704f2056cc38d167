import type { FastifyBaseLogger } from "fastify";
import type { BillingService } from "../../billing/billing-service.ts";
import type { PriceList } from "../../billing/prices.ts";
import type { Config } from "../../config/schema.ts";
import type { Catalogue } from "../../engines/catalogue.ts";
import type { EngineRegistry } from "../../engines/registry.ts";
import type { Router } from "../../engines/router.ts";
import type { JobQueue } from "../../jobs/job-queue.ts";
import type { VideoJobsRepository } from "../../store/repositories/video-jobs.ts";
import type { ContentCheck } from "../audio/content-check.ts";
import { VideoCancel } from "./video-cancel.ts";
import { VideoRunner } from "./video-runner.ts";
import { VideoService } from "./video-service.ts";

/** The video services of one configuration: the request side and the runner of the jobs' steps. */
export function createVideoServices(
  config: Config,
  deps: {
    repo: VideoJobsRepository;
    queue: JobQueue;
    registry: EngineRegistry;
    router: Router;
    catalogue: Catalogue;
    billing: BillingService;
    prices: PriceList;
    contentCheck: ContentCheck;
    installationZones: string[];
    now: () => Date;
    log: FastifyBaseLogger | undefined;
  },
): { videos: VideoService; videoRunner: VideoRunner } {
  const { log, ...shared } = deps;
  const logged = log ? { log } : {};
  const cancel = new VideoCancel({ registry: deps.registry, router: deps.router, ...logged });
  const engines = config.engines;
  const queueTimeoutMs = engines.video_queue_timeout_seconds * 1000;
  const runTimeoutMs = engines.video_run_timeout_seconds * 1000;
  const videos = new VideoService({
    ...shared,
    cancel,
    // The money stays held while the job may wait and run, and ten minutes more.
    holdSeconds: Math.ceil((queueTimeoutMs + runTimeoutMs) / 1000) + 600,
    ...logged,
  });
  const videoRunner = new VideoRunner({
    ...shared,
    cancel,
    pollMs: engines.video_poll_interval_seconds * 1000,
    queueTimeoutMs,
    runTimeoutMs,
    unreadableMs: engines.video_status_unreadable_seconds * 1000,
    ...logged,
  });
  return { videos, videoRunner };
}
