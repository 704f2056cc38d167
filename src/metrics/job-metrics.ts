import type { JobQueue } from "../jobs/job-queue.ts";
import type { MetricsRegistry } from "./metrics-registry.ts";

// A scrape never waits longer than this on Redis; the series is left out of a scrape that would.
const COUNT_WAIT_MS = 100;

/**
 * `zona_jobs_waiting{queue}`: background jobs waiting to run, read at every scrape from each queue
 * (`queue` is its kind: `in-process`, `table` (the durable jobs of the embedded mode, in the
 * database) or `bullmq`; a BullMQ queue or a table is shared, so every instance shows the count of
 * all). A count not given within 100 ms is left out rather than waited for; a count still running
 * is not asked for again.
 */
export function registerJobMetrics(metrics: MetricsRegistry, queues: () => JobQueue[]): void {
  // By kind: the queues of one app are of different kinds (or the same queue twice).
  const pending = new Map<string, Promise<number>>();
  metrics.gauge(
    "zona_jobs_waiting",
    "Background jobs waiting to run (queued or waiting for a retry), by queue.",
    ["queue"],
    async (gauge) => {
      gauge.reset();
      const byKind = new Map(queues().map((jobs) => [jobs.kind, jobs]));
      const counts = [...byKind.values()].map(async (jobs) => {
        if (!jobs.waitingCount) return;
        let counting = pending.get(jobs.kind);
        if (!counting) {
          const started = Promise.resolve(jobs.waitingCount());
          counting = started;
          pending.set(jobs.kind, started);
          const forget = () => {
            if (pending.get(jobs.kind) === started) pending.delete(jobs.kind);
          };
          started.then(forget, forget);
        }
        const count = await withinWait(counting);
        if (count !== undefined) gauge.labels(jobs.kind).set(count);
      });
      await Promise.all(counts);
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
