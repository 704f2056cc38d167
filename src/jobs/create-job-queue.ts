import type { FastifyBaseLogger } from "fastify";
import { redisKeyPrefixes } from "../config/redis-keys.ts";
import type { Config } from "../config/schema.ts";
import type { Store } from "../store/database.ts";
import { DurableJobsRepository } from "../store/repositories/durable-jobs.ts";
import { BullMqQueue } from "./bullmq-queue.ts";
import { InProcessQueue } from "./in-process-queue.ts";
import type { JobQueue } from "./job-queue.ts";
import { TableQueue } from "./table-queue.ts";

/** The job queue of the configuration: BullMQ when `server.redis_url` is set, else in the process. */
export function createJobQueue(config: Config, log?: FastifyBaseLogger): JobQueue {
  const url = config.server.redis_url;
  if (!url) return new InProcessQueue(log ? { log } : {});
  return new BullMqQueue({
    url,
    prefix: redisKeyPrefixes(config).jobs,
    crashLimit: config.server.job_crash_limit,
    ...(log ? { log } : {}),
  });
}

/** Timings of the table queue that tests shorten. */
export interface DurableQueueOptions {
  /** Longest wait between two looks at the table. */
  pollMs?: number;
  /** How long a dead process's job stays held. */
  leaseMs?: number;
}

/**
 * The queue of jobs that must survive a restart (video generation): the BullMQ queue `jobs` itself
 * when there is one (it is durable already), else a queue kept in the database's `durable_jobs`.
 */
export function createDurableQueue(
  config: Config,
  store: Store,
  jobs: JobQueue,
  log?: FastifyBaseLogger,
  options: DurableQueueOptions = {},
): JobQueue {
  if (jobs.kind === "bullmq") return jobs;
  return new TableQueue({
    repo: new DurableJobsRepository(store.db),
    // One process at a time opens the embedded database: what holds a job there died.
    sole: store.kind === "pglite",
    crashLimit: config.server.job_crash_limit,
    ...options,
    ...(log ? { log } : {}),
  });
}
