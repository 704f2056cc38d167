import type { FastifyBaseLogger } from "fastify";
import type { BillingService } from "../../billing/billing-service.ts";
import type { PriceList } from "../../billing/prices.ts";
import type { TierName } from "../../config/schema.ts";
import type { VideoEngine } from "../../engines/modalities.ts";
import type { EngineRegistry, Machine } from "../../engines/registry.ts";
import type { Router } from "../../engines/router.ts";
import { type EngineVideoJob, UpstreamError, type VideoSize } from "../../engines/types.ts";
import { engineTextLogFields, upstreamLogFields } from "../../engines/upstream-log.ts";
import { JOB_DONE, type JobOutcome, jobFailed, runAgainIn } from "../../jobs/job-queue.ts";
import { Mp4Error } from "../../media/mp4-ai-mark.ts";
import type { VideoJobRow, VideoJobsRepository } from "../../store/repositories/video-jobs.ts";
import type { VideoCancel } from "./video-cancel.ts";
import { finishClip } from "./video-clip.ts";
import { FAILURES, type JobFailure } from "./video-failures.ts";
import { VIDEO_KEPT_SECONDS } from "./video-service.ts";

/** Frames per second of every clip. */
export const VIDEO_FPS = 24;

/** The signal of calls that must finish even while the process closes. */
const UNCUT = new AbortController().signal;

/** A machine that had a free place a moment ago had none when the job asked for it. */
class NoRoom extends Error {}

/**
 * Makes video jobs, one short step per run of the queued job (so a job of minutes never holds a
 * worker, and a restarted or other instance carries on where the last step ended):
 * - queued: find a machine of the job's zones with a free place (capacity counted over every
 *   instance in the database), create the job there and keep the engine's id; no place: wait;
 * - in progress: ask the engine how far it is; when done, download the clip, remove its sound,
 *   mark it as made by AI, keep it 7 days, settle the money to the clip's seconds;
 * - failed, timed out, its state unreadable for `unreadableMs`, or the machine gone: the job fails
 *   with an `error` and its money is released.
 * Each step is idempotent: a step run twice (a process died mid-step) changes nothing more.
 */
export class VideoRunner {
  private readonly repo: VideoJobsRepository;
  private readonly registry: EngineRegistry;
  private readonly router: Router;
  private readonly billing: BillingService;
  private readonly prices: PriceList;
  private readonly cancel: VideoCancel;
  private readonly pollMs: number;
  private readonly queueTimeoutMs: number;
  private readonly runTimeoutMs: number;
  private readonly unreadableMs: number;
  private readonly now: () => Date;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(deps: {
    repo: VideoJobsRepository;
    registry: EngineRegistry;
    router: Router;
    billing: BillingService;
    prices: PriceList;
    cancel: VideoCancel;
    pollMs: number;
    queueTimeoutMs: number;
    runTimeoutMs: number;
    /** How long a running job's state may stay unreadable (the machine down, erring) before it fails. */
    unreadableMs: number;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    this.repo = deps.repo;
    this.registry = deps.registry;
    this.router = deps.router;
    this.billing = deps.billing;
    this.prices = deps.prices;
    this.cancel = deps.cancel;
    this.pollMs = deps.pollMs;
    this.queueTimeoutMs = deps.queueTimeoutMs;
    this.runTimeoutMs = deps.runTimeoutMs;
    this.unreadableMs = deps.unreadableMs;
    this.now = deps.now;
    this.log = deps.log;
  }

  /** One step of a job: `later` while it goes on, `done` once it has ended, `failed` when it failed. */
  async step(id: string, signal: AbortSignal): Promise<JobOutcome> {
    const job = await this.repo.byId(id);
    if (!job || job.status === "failed") return JOB_DONE;
    if (job.status === "completed") {
      await this.settle(job);
      return JOB_DONE;
    }
    try {
      return job.status === "queued" ? await this.place(job, signal) : await this.follow(job, signal);
    } catch (error) {
      // Closing mid-step: the job is taken up again at the next start, from what is stored.
      if (signal.aborted) return runAgainIn(0);
      throw error;
    }
  }

  /**
   * The job's hook when its queue gave it up (its steps stopped the service `deaths` times): it
   * fails at no charge, like any failed job, and is deleted on its machine.
   */
  async givenUp(id: string, deaths: number): Promise<void> {
    const job = await this.repo.byId(id);
    if (!job || job.status === "completed" || job.status === "failed") return;
    await this.fail(job, {
      code: "server_error",
      message: `Making this video stopped the service ${deaths} times; it was set aside. Nothing was charged.`,
    });
    if (job.machine !== null && job.engineJobId !== null) {
      void this.cancel.onEngine(job.machine, job.engineJobId, job.id);
    }
  }

  /** Gives a queued job to a machine with a free place, or waits for one. */
  private async place(job: VideoJobRow, signal: AbortSignal): Promise<JobOutcome> {
    if (this.elapsed(job.createdAt) > this.queueTimeoutMs) return this.fail(job, FAILURES.queueTimeout);
    const zones = job.zones === null ? null : new Set(job.zones);
    const machines = this.registry.candidates(job.model, zones, job.tier as TierName, "videos");
    if (machines.length === 0) return this.fail(job, FAILURES.gone);
    const running = await this.repo.runningOn(machines.map((machine) => machine.config.name));
    const free = machines.filter(
      (machine) => (running.get(machine.config.name) ?? 0) < machine.config.capacity,
    );
    if (free.length === 0) return this.later();
    let refusal: UpstreamError | undefined;
    let created: { machine: Machine; engineJob: EngineVideoJob } | undefined;
    try {
      await this.router.runAmong(
        free,
        "videos",
        async (machine, engine) => {
          if (!(await this.repo.claim(job.id, machine.config.name, machine.config.capacity, this.now()))) {
            throw new NoRoom();
          }
          try {
            // Not cut by a closing process: a job the engine made but whose id was lost would be made
            // twice. The call is short (the engine answers at once with its queued job) and bounded.
            const engineJob = await engine.createVideo(machine.config, callOf(job), UNCUT);
            created = { machine, engineJob };
          } catch (error) {
            await this.repo.unclaim(job.id);
            if (error instanceof UpstreamError && !error.retryable) refusal = error;
            throw error;
          }
        },
        () => new NoRoom(),
        { model: job.model },
      );
    } catch (error) {
      if (signal.aborted) throw error;
      // A machine refused the request itself (a 4xx): asking again cannot help.
      if (refusal) return this.fail(job, FAILURES.engine, upstreamLogFields(refusal));
      // No place after all, or the machines are down: the job stays queued until one answers.
      return this.later();
    }
    if (!created) return this.later();
    const { machine, engineJob } = created;
    if (!(await this.repo.started(job.id, engineJob.id))) {
      // Deleted while the machine was being asked: nothing must run there for it.
      await this.cancel.onEngine(machine.config.name, engineJob.id, job.id);
      return JOB_DONE;
    }
    this.log?.info(
      { video_id: job.id, machine: machine.config.name, zone: machine.config.zone, engine_job: engineJob.id },
      "video job started",
    );
    return this.later();
  }

  /** Asks the engine how far the job is; downloads and delivers the clip once it is done. */
  private async follow(job: VideoJobRow, signal: AbortSignal): Promise<JobOutcome> {
    if (job.engineJobId === null) {
      // The process stopped between taking a machine and hearing back from it: ask again.
      await this.repo.unclaim(job.id);
      return runAgainIn(0);
    }
    const engineJobId = job.engineJobId;
    const machine = this.registry.machines.find((candidate) => candidate.config.name === job.machine);
    if (!machine) return this.fail(job, FAILURES.gone);
    if (this.elapsed(job.startedAt ?? job.createdAt) > this.runTimeoutMs) {
      await this.cancel.onEngine(machine.config.name, engineJobId, job.id, signal);
      return this.fail(job, FAILURES.runTimeout);
    }
    const read = await this.onMachine(
      machine,
      job,
      signal,
      (engine) => engine.videoJob(machine.config, engineJobId, signal),
      (failure) => this.unanswered(machine, job, signal, failure),
    );
    if ("outcome" in read) return read.outcome;
    const state = read.value;
    if (job.statusUnreadableSince !== null) await this.repo.stateRead(job.id);
    if (state.status === "failed") {
      return this.fail(job, FAILURES.engine, state.error ? engineTextLogFields(state.error) : undefined);
    }
    if (state.status !== "completed") {
      const progress = Math.min(99, Math.round(state.progress ?? 0));
      if (progress > job.progress) await this.repo.progress(job.id, progress);
      return this.later();
    }
    const mp4 = await this.onMachine(machine, job, signal, (engine) =>
      engine.videoContent(machine.config, engineJobId, signal),
    );
    if ("outcome" in mp4) return mp4.outcome;
    return this.deliver(job, machine, mp4.value);
  }

  /** Keeps the finished clip, settles the money, and frees the engine of its copy. */
  private async deliver(job: VideoJobRow, machine: Machine, engineMp4: Buffer): Promise<JobOutcome> {
    let clip: ReturnType<typeof finishClip>;
    try {
      clip = finishClip(engineMp4, job.seconds);
    } catch (error) {
      if (!(error instanceof Mp4Error)) throw error;
      return this.fail(job, FAILURES.unreadable, { reason: error.message });
    }
    if (clip.fps !== VIDEO_FPS) {
      this.log?.warn(
        { video_id: job.id, machine: machine.config.name, fps: clip.fps },
        "video clip is not 24 fps",
      );
    }
    const now = this.now();
    const stored = await this.repo.complete(job.id, {
      clip: clip.mp4,
      clipSeconds: clip.seconds,
      completedAt: now,
      expiresAt: new Date(now.getTime() + VIDEO_KEPT_SECONDS * 1000),
    });
    if (stored) {
      const done = await this.repo.byId(job.id);
      if (done) await this.settle(done);
      this.log?.info(
        {
          video_id: job.id,
          machine: machine.config.name,
          seconds: clip.seconds,
          ms: now.getTime() - job.createdAt.getTime(),
          ...(clip.hadAudio ? { audio_removed: true } : {}),
        },
        "video job completed",
      );
    }
    // Delivered or deleted meanwhile: either way the engine's copy is not needed any more.
    void this.cancel.onEngine(machine.config.name, job.engineJobId ?? "", job.id);
    return JOB_DONE;
  }

  /** Charges a completed job's seconds; settling again (a step run twice) changes nothing. */
  private async settle(job: VideoJobRow): Promise<void> {
    const seconds = job.clipSeconds ?? job.seconds;
    const zone =
      this.registry.machines.find((machine) => machine.config.name === job.machine)?.config.zone ?? null;
    await this.billing.closeDurable(
      job.requestId,
      {
        costMicros: this.prices.video(seconds),
        units: { seconds },
        outcome: "ok",
        zone,
        machine: job.machine,
        durationMs: (job.completedAt ?? this.now()).getTime() - job.createdAt.getTime(),
      },
      { model: job.model, tier: job.tier },
    );
  }

  /**
   * Ends the job as failed and releases its money; `why` goes to the log only, without the engine's
   * words (see upstream-log.ts). The run is `failed`, or `done` when the job had ended already.
   */
  private async fail(job: VideoJobRow, failure: JobFailure, why?: object): Promise<JobOutcome> {
    const now = this.now();
    const failed = await this.repo.fail(
      job.id,
      failure,
      now,
      new Date(now.getTime() + VIDEO_KEPT_SECONDS * 1000),
    );
    if (!failed) return JOB_DONE;
    this.log?.warn(
      {
        video_id: job.id,
        machine: job.machine,
        code: failure.code,
        ...why,
      },
      "video job failed",
    );
    await this.billing.closeDurable(
      job.requestId,
      {
        costMicros: 0,
        units: { seconds: 0 },
        outcome: "failed",
        zone: null,
        machine: job.machine,
        durationMs: now.getTime() - job.createdAt.getTime(),
      },
      { model: job.model, tier: job.tier },
    );
    return jobFailed(failure.code);
  }

  /**
   * The job's state could not be read (the machine refused, hung, or erred without the job): it
   * fails, and is deleted on its machine, once that has lasted `unreadableMs` since the first such
   * read after the last good one. That time is kept on the job's row, so another instance or a
   * restart goes on counting; a good read clears it.
   */
  private async unanswered(
    machine: Machine,
    job: VideoJobRow,
    signal: AbortSignal,
    failure?: UpstreamError,
  ): Promise<JobOutcome | undefined> {
    const since = await this.repo.stateUnread(job.id, this.now());
    if (since === undefined || this.elapsed(since) <= this.unreadableMs) return undefined;
    const ended = await this.fail(job, FAILURES.silent, {
      unreadable_ms: this.elapsed(since),
      ...(failure ? upstreamLogFields(failure) : { reason: "the machine is left out (circuit open)" }),
    });
    // Not awaited: a machine that does not answer would hold the step up to the cancel's timeout.
    void this.cancel.onEngine(machine.config.name, job.engineJobId ?? "", job.id, signal);
    return ended;
  }

  /**
   * One call to the job's own machine. A machine that does not answer now is asked again at the
   * next step (until the run timeout, or until `unanswered`, told of it, ends the job); one that no
   * longer knows the job (404) has lost it.
   */
  private async onMachine<T>(
    machine: Machine,
    job: VideoJobRow,
    signal: AbortSignal,
    call: (engine: VideoEngine) => Promise<T>,
    unanswered?: (failure: UpstreamError | undefined) => Promise<JobOutcome | undefined>,
  ): Promise<{ value: T } | { outcome: JobOutcome }> {
    let failure: UpstreamError | undefined;
    try {
      const routed = await this.router.runAmong(
        [machine],
        "videos",
        async (_target, engine) => {
          try {
            return await call(engine);
          } catch (error) {
            if (error instanceof UpstreamError) failure = error;
            throw error;
          }
        },
        () => new NoRoom(),
        { model: job.model },
      );
      return { value: routed.result };
    } catch (error) {
      if (signal.aborted) throw error;
      if (failure?.kind === "status" && failure.status === 404) {
        return { outcome: await this.fail(job, FAILURES.lost, upstreamLogFields(failure)) };
      }
      if (failure?.kind === "protocol") {
        return { outcome: await this.fail(job, FAILURES.unreadable, upstreamLogFields(failure)) };
      }
      return { outcome: (await unanswered?.(failure)) ?? this.later() };
    }
  }

  /** The job goes on: asked again after the poll interval. */
  private later(): JobOutcome {
    return runAgainIn(this.pollMs);
  }

  private elapsed(since: Date): number {
    return this.now().getTime() - since.getTime();
  }
}

function callOf(job: VideoJobRow) {
  return {
    model: job.model,
    prompt: job.prompt,
    seconds: job.seconds,
    size: job.size as VideoSize,
    fps: VIDEO_FPS,
    ...(job.seed !== null ? { seed: job.seed } : {}),
  };
}
