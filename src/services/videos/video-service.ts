import type { FastifyBaseLogger } from "fastify";
import type { BillingService } from "../../billing/billing-service.ts";
import type { Payer } from "../../billing/payer.ts";
import type { PriceList } from "../../billing/prices.ts";
import type { ModelConfig, TierName } from "../../config/schema.ts";
import type { Catalogue } from "../../engines/catalogue.ts";
import type { EngineRegistry } from "../../engines/registry.ts";
import { noEngineAvailable } from "../../errors/media-errors.ts";
import {
  tooManyVideoJobs,
  videoModelNotFound,
  videoNotFound,
  videoNotReady,
} from "../../errors/video-errors.ts";
import type { JobQueue } from "../../jobs/job-queue.ts";
import {
  UNFINISHED,
  type VideoJobRow,
  type VideoJobsRepository,
} from "../../store/repositories/video-jobs.ts";
import type { RequestTrace } from "../../trace/request-trace.ts";
import type { ContentCheck } from "../audio/content-check.ts";
import type { VideoCancel } from "./video-cancel.ts";
import { isVideoId, newVideoId } from "./video-ids.ts";
import { type VideoObject, videoObject } from "./video-object.ts";
import { VIDEO_JOB, videoQueueId } from "./video-queue.ts";
import type { VideoRequest } from "./video-request.ts";

/** Whose videos: the key's account (key API) or a signed-in user (app API), and who pays. */
export interface VideoOwner {
  /** `account:<id>` or `user:<id>`: one job at a time per person, and only theirs are seen. */
  person: string;
  payer: Payer;
}

/** A request to make a video, with where it comes from. */
export interface VideoCreateContext {
  requestId: string;
  owner: VideoOwner;
  tier: TierName;
  signal: AbortSignal;
  trace?: RequestTrace;
}

/** One page of `GET /v1/videos`. */
export interface VideoList {
  object: "list";
  data: VideoObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** A finished clip to send. */
export interface VideoContent {
  mp4: Buffer;
  /** Seconds until it is deleted (for `Cache-Control`). */
  secondsLeft: number;
}

/**
 * The video model the API names (docs/videos-api.md): it exists only where machines make it,
 * elsewhere 503, not unknown.
 */
const NAMED_VIDEO_MODEL = "wan-2.2-5b-fast";
/** Kept this long after it ends. */
export const VIDEO_KEPT_SECONDS = 7 * 24 * 60 * 60;

/**
 * The request side of video generation: a job is checked (model, machines in the
 * key's zones, the prompt in each zone that may make it), stored as the person's one unfinished job
 * (atomically: the database refuses a second), its highest cost held, and queued; a worker of any
 * instance makes it (video-runner.ts). Listing, reading, downloading and deleting see only the
 * person's own jobs, and jobs past their 7 days are gone even before the sweep deletes them.
 */
export class VideoService {
  private readonly repo: VideoJobsRepository;
  private readonly queue: JobQueue;
  private readonly registry: EngineRegistry;
  private readonly catalogue: Catalogue;
  private readonly billing: BillingService;
  private readonly prices: PriceList;
  private readonly contentCheck: ContentCheck;
  private readonly cancel: VideoCancel;
  private readonly installationZones: string[];
  /** How long the money may stay held: the longest a job can wait and run, and a margin. */
  private readonly holdSeconds: number;
  private readonly now: () => Date;
  private readonly log: FastifyBaseLogger | undefined;

  constructor(deps: {
    repo: VideoJobsRepository;
    queue: JobQueue;
    registry: EngineRegistry;
    catalogue: Catalogue;
    billing: BillingService;
    prices: PriceList;
    contentCheck: ContentCheck;
    cancel: VideoCancel;
    installationZones: string[];
    holdSeconds: number;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    this.repo = deps.repo;
    this.queue = deps.queue;
    this.registry = deps.registry;
    this.catalogue = deps.catalogue;
    this.billing = deps.billing;
    this.prices = deps.prices;
    this.contentCheck = deps.contentCheck;
    this.cancel = deps.cancel;
    this.installationZones = deps.installationZones;
    this.holdSeconds = deps.holdSeconds;
    this.now = deps.now;
    this.log = deps.log;
  }

  async create(request: VideoRequest, context: VideoCreateContext): Promise<VideoObject> {
    const model = this.model(request.model);
    const { owner, trace } = context;
    if (trace) {
      trace.model = model.id;
      trace.tier ??= context.tier;
    }
    const zones = this.installationZones.length === 0 ? null : (owner.payer.zones ?? this.installationZones);
    const machines = this.registry.candidates(
      model.id,
      zones === null ? null : new Set(zones),
      context.tier,
      "videos",
    );
    if (machines.length === 0) throw noEngineAvailable(model.id);
    // Whichever machine makes the video, the prompt has passed the check of its zone.
    for (const zone of new Set(machines.map((machine) => machine.config.zone))) {
      await this.contentCheck.checkPrompt(request.prompt, zone, context.signal, trace, "no video was made");
    }
    const id = newVideoId(this.now());
    const stored = await this.repo.insert({
      id,
      person: owner.person,
      accountId: owner.payer.accountId,
      keyId: owner.payer.keyId,
      model: model.id,
      prompt: request.prompt,
      seconds: request.seconds,
      size: request.size,
      seed: request.seed ?? null,
      tier: context.tier,
      zones,
      requestId: context.requestId,
      createdAt: this.now(),
    });
    if (!stored) throw tooManyVideoJobs();
    try {
      await this.billing.reserveDurable({
        requestId: context.requestId,
        principal: owner.payer,
        endpoint: "videos",
        model: model.id,
        tier: context.tier,
        maxCostMicros: this.prices.video(request.seconds),
        holdSeconds: this.holdSeconds,
      });
    } catch (error) {
      await this.repo.removeOwned(owner.person, id);
      throw error;
    }
    await this.queue.add(VIDEO_JOB, { id }, { id: videoQueueId(id) }).catch((error: unknown) => {
      // The job is stored: the upkeep queues every unfinished job it finds without a worker.
      this.log?.warn(
        { err: error, video_id: id },
        "video job stored but not queued yet; the upkeep will queue it",
      );
    });
    // As it was stored: a worker may already have moved it on, which the next GET shows.
    return videoObject(stored);
  }

  /** A person's job; 404 for a missing one, another person's, or one past its 7 days. */
  async get(owner: VideoOwner, id: string): Promise<VideoObject> {
    return videoObject(await this.own(owner, id));
  }

  /** A page of the person's jobs, newest first unless `order` is `asc`. */
  async list(
    owner: VideoOwner,
    page: { after?: string; limit: number; order: "asc" | "desc" },
  ): Promise<VideoList> {
    const found = await this.repo.list(owner.person, page);
    const now = this.now();
    const data = found.rows.filter((row) => !expired(row, now)).map(videoObject);
    return {
      object: "list",
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: found.hasMore,
    };
  }

  /** The clip of a completed job; 409 while it is not (or never will be) completed. */
  async content(owner: VideoOwner, id: string): Promise<VideoContent> {
    const row = await this.own(owner, id);
    if (row.status !== "completed") throw videoNotReady(videoObject(row).status, row.progress);
    const kept = await this.repo.clip(owner.person, id);
    if (!kept) throw videoNotFound();
    const secondsLeft = kept.expiresAt
      ? Math.max(0, Math.floor((kept.expiresAt.getTime() - this.now().getTime()) / 1000))
      : VIDEO_KEPT_SECONDS;
    return { mp4: kept.clip, secondsLeft };
  }

  /**
   * Deletes a job and its clip. One not finished is cancelled on its engine (in the background: the
   * answer does not wait for the machine) and its held money released.
   */
  async delete(
    owner: VideoOwner,
    id: string,
  ): Promise<{ id: string; object: "video.deleted"; deleted: true }> {
    if (!isVideoId(id)) throw videoNotFound();
    const row = await this.repo.removeOwned(owner.person, id);
    if (!row || expired(row, this.now())) throw videoNotFound();
    if ((UNFINISHED as readonly string[]).includes(row.status)) {
      await this.billing.closeDurable(
        row.requestId,
        {
          costMicros: 0,
          units: { seconds: 0 },
          outcome: "cancelled",
          zone: null,
          machine: row.machine,
          durationMs: this.now().getTime() - row.createdAt.getTime(),
        },
        { model: row.model, tier: row.tier },
      );
      if (row.machine && row.engineJobId) void this.cancel.onEngine(row.machine, row.engineJobId, row.id);
    }
    return { id, object: "video.deleted", deleted: true };
  }

  private async own(owner: VideoOwner, id: string): Promise<VideoJobRow> {
    if (!isVideoId(id)) throw videoNotFound();
    const row = await this.repo.owned(owner.person, id);
    if (!row || expired(row, this.now())) throw videoNotFound();
    return row;
  }

  /** The catalogue's video model of that name, or its first video model. */
  private model(id: string | undefined): ModelConfig {
    if (id === undefined) {
      const model = this.catalogue.firstOfKind("video");
      if (!model) throw noEngineAvailable(NAMED_VIDEO_MODEL);
      return model;
    }
    const model = this.catalogue.find(id);
    if (model === undefined && id === NAMED_VIDEO_MODEL) throw noEngineAvailable(id);
    if (model?.kind !== "video") throw videoModelNotFound(id);
    return model;
  }
}

function expired(row: VideoJobRow, now: Date): boolean {
  return row.expiresAt !== null && row.expiresAt.getTime() <= now.getTime();
}
