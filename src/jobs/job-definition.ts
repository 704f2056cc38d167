import type { JobHandler, JobHooks } from "./job-queue.ts";

/**
 * A kind of background job as its capability defines it: its name, the queue that keeps it, one
 * run of it, what happens when its queue gives it up, and the upkeep that finds its lost jobs again.
 * The app registers every definition in one place (`services/background-jobs.ts`).
 */
export interface JobDefinition<T> {
  /** The name jobs of this kind are queued under. */
  name: string;
  /**
   * `durable`: the jobs survive a restart (a table embedded, BullMQ distributed) and one whose runs
   * kill their process is given up; `throwaway`: they may be lost (in the process embedded), and the
   * upkeep queues them again.
   */
  queue: "durable" | "throwaway";
  /** One run: `done`, or `later` when the job goes on (job-queue.ts). */
  step: JobHandler<T>;
  /** What the capability does with a job its queue gave up (the user is told why). */
  onGaveUp?: JobHooks<T>["onGaveUp"];
  /** Finds the jobs whose queue entry was lost and cleans after the finished ones; started with the app. */
  upkeep?: { start(): void };
}
