import type { JobQueue } from "../jobs/job-queue.ts";
import type { MetricsRegistry } from "./metrics-registry.ts";

// A scrape never waits longer than this on Redis; the series is left out of a scrape that would.
const COUNT_WAIT_MS = 100;

/**
 * `zona_jobs_waiting{queue}`: background jobs waiting to run, read at every scrape from the queue
 * (`queue` is its kind, `in-process` or `bullmq`; a BullMQ queue is shared, so every instance shows
 * the count of all). A count Redis does not give within 100 ms is left out rather than waited for;
 * a count still running is not asked for again.
 */
export function registerJobMetrics(metrics: MetricsRegistry, queue: () => JobQueue): void {
  let pending: Promise<number> | undefined;
  metrics.gauge(
    "zona_jobs_waiting",
    "Background jobs waiting to run (queued or waiting for a retry), by queue.",
    ["queue"],
    async (gauge) => {
      gauge.reset();
      const jobs = queue();
      if (!jobs.waitingCount) return;
      if (!pending) {
        const counting = Promise.resolve(jobs.waitingCount());
        pending = counting;
        const forget = () => {
          if (pending === counting) pending = undefined;
        };
        counting.then(forget, forget);
      }
      const count = await withinWait(pending);
      if (count !== undefined) gauge.labels(jobs.kind).set(count);
    },
  );
}

async function withinWait(count: Promise<number>): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), COUNT_WAIT_MS);
  });
  try {
    return await Promise.race([count.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
