import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { BullMqQueue, type BullMqQueueOptions } from "../../src/jobs/bullmq-queue.ts";
import { InProcessQueue } from "../../src/jobs/in-process-queue.ts";
import type { JobQueue } from "../../src/jobs/job-queue.ts";

/** The Redis server of CI (redis://127.0.0.1:6379), when there is one. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL;

/** A BullMQ key prefix of its own, so parallel test files never take each other's jobs. */
export function uniqueJobsPrefix(): string {
  return `zona-test-jobs-${randomBytes(6).toString("hex")}`;
}

/** A BullMQ queue on the test Redis; short backoffs so retries do not slow tests. */
export function bullQueue(prefix: string, options: Partial<BullMqQueueOptions> = {}): BullMqQueue {
  if (!TEST_REDIS_URL) throw new Error("TEST_REDIS_URL is not set");
  return new BullMqQueue({ url: TEST_REDIS_URL, prefix, backoffMs: 10, ...options });
}

/** Deletes every key under a prefix (after the queues using it closed). */
export async function dropJobKeys(prefix: string): Promise<void> {
  if (!TEST_REDIS_URL) return;
  const redis = new Redis(TEST_REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/** The queues the job tests run on: in the process always, BullMQ when TEST_REDIS_URL is set. */
export const QUEUE_KINDS: Array<{
  name: string;
  /** A queue; BullMQ queues made with the same prefix share their jobs (instances of one installation). */
  make(prefix: string, options?: { attempts?: number }): JobQueue;
}> = [
  { name: "in-process", make: (_prefix, options) => new InProcessQueue({ backoffMs: 10, ...options }) },
  ...(TEST_REDIS_URL
    ? [
        {
          name: "bullmq",
          make: (prefix: string, options?: { attempts?: number }) => bullQueue(prefix, options),
        },
      ]
    : []),
];
