import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config/schema.ts";
import { BullMqQueue } from "./bullmq-queue.ts";
import { InProcessQueue } from "./in-process-queue.ts";
import type { JobQueue } from "./job-queue.ts";

/** The job queue of the configuration: BullMQ when `server.redis_url` is set, else in the process. */
export function createJobQueue(config: Config, log?: FastifyBaseLogger): JobQueue {
  const url = config.server.redis_url;
  if (!url) return new InProcessQueue(log ? { log } : {});
  return new BullMqQueue({ url, prefix: `${config.server.redis_prefix}:jobs`, ...(log ? { log } : {}) });
}
