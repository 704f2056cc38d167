import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { formValues, isMultipart } from "./fake-multipart.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
  takeKnobs,
} from "./fake-server.ts";

/** Knobs of the videos fake. */
export interface FakeVideosSettings {
  /** How long a job takes from creation to completed (the first tenth of it queued). */
  jobMs: number;
  /** The clip a completed job serves; undefined: the fixture MP4 (test/fixtures/video/clip.mp4). */
  clip: Buffer | undefined;
  /** Jobs fail after half of `jobMs` with `failMessage` (the engine ran out of memory...). */
  failMidJob: boolean;
  failMessage: string;
  /** The content of a completed job is bytes that are no MP4. */
  garbageContent: boolean;
  /** Status words as SGLang's older releases and other servers say them (`processing`). */
  statusWords: "openai" | "processing";
  /**
   * vLLM-Omni's way: `GET /v1/videos/{id}` of a failed job answers this status (500, or a 4xx or
   * 5xx taken from the job's `error.code`, which then says it) with the failed job record as its
   * body. Undefined: 200 with the record (SGLang's way).
   */
  failedStatus: number | undefined;
  /**
   * `GET /v1/videos/{id}` answers 503 with an error body and no job, as a server that cannot tell
   * now; the other calls (create, content, delete) answer as usual. Jobs go on meanwhile.
   */
  statusUnavailable: boolean;
}

/** The defaults of the videos knobs. */
export const DEFAULT_VIDEOS_SETTINGS: FakeVideosSettings = {
  jobMs: 300,
  clip: undefined,
  failMidJob: false,
  failMessage: "CUDA out of memory",
  garbageContent: false,
  statusWords: "openai",
  failedStatus: undefined,
  statusUnavailable: false,
};
const VIDEOS_KEYS = Object.keys(DEFAULT_VIDEOS_SETTINGS) as Array<keyof FakeVideosSettings>;

/** One job the fake was asked for, with what was asked (numbers parsed from the form). */
export interface FakeVideoJob {
  id: string;
  model: string;
  prompt: string;
  size: string;
  seconds: number | undefined;
  fps: number | undefined;
  frames: number | undefined;
  seed: number | undefined;
  /** Whether the body was a multipart form (what vLLM-Omni requires). */
  form: boolean;
  createdAt: number;
  /** Fixed at creation from the knobs then in force. */
  jobMs: number;
  fails: boolean;
  failMessage: string;
}

const FIXTURE_DIR = fileURLToPath(new URL("../fixtures/video/", import.meta.url));

/** test/fixtures/video/clip.mp4 (video only, as Wan makes it), another MP4 there, or a bare `ftyp` box. */
function fixtureClip(): Buffer {
  try {
    const files = readdirSync(FIXTURE_DIR).filter((file) => file.endsWith(".mp4"));
    const name = files.includes("clip.mp4") ? "clip.mp4" : files.sort()[0];
    if (name !== undefined) return readFileSync(`${FIXTURE_DIR}${name}`);
  } catch {
    // No fixture folder: the stand-in below.
  }
  // Not playable, but an MP4 by its first box; tests that read frames pass a real clip.
  const ftyp = Buffer.alloc(24);
  ftyp.writeUInt32BE(24, 0);
  ftyp.write("ftypisom", 4, "latin1");
  ftyp.writeUInt32BE(512, 12);
  ftyp.write("isommp41", 16, "latin1");
  return ftyp;
}

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

function errorBody(status: number, message: string): unknown {
  return { error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", code: status } };
}

type Phase = "queued" | "in_progress" | "completed" | "failed";

/** Where a job is now, and its progress in percent. */
function phase(job: FakeVideoJob, now: number): { status: Phase; progress: number } {
  const elapsed = now - job.createdAt;
  if (job.fails && elapsed >= job.jobMs / 2) return { status: "failed", progress: 50 };
  if (elapsed >= job.jobMs) return { status: "completed", progress: 100 };
  if (elapsed < job.jobMs / 10) return { status: "queued", progress: 0 };
  return { status: "in_progress", progress: Math.min(99, Math.floor((elapsed / job.jobMs) * 100)) };
}

function record(job: FakeVideoJob, knobs: FakeVideosSettings, now: number): Record<string, unknown> {
  const { status, progress } = phase(job, now);
  const word = status === "in_progress" && knobs.statusWords === "processing" ? "processing" : status;
  return {
    id: job.id,
    object: "video",
    model: job.model,
    prompt: job.prompt,
    status: word,
    progress,
    size: job.size,
    seconds: String(job.seconds ?? 4),
    quality: "default",
    created_at: Math.floor(job.createdAt / 1000),
    completed_at: status === "completed" ? Math.floor((job.createdAt + job.jobMs) / 1000) : null,
    error:
      status === "failed"
        ? { code: knobs.failedStatus ?? "generation_failed", message: job.failMessage }
        : null,
    media_type: "video/mp4",
  };
}

/** A field of a form or JSON body, as text. */
function field(body: unknown, name: string): string | undefined {
  if (isMultipart(body)) return formValues(body, name)[0];
  if (typeof body === "object" && body !== null) {
    const value = (body as Record<string, unknown>)[name];
    return value === undefined || value === null ? undefined : String(value);
  }
  return undefined;
}

function numeric(text: string | undefined): number | undefined {
  if (text === undefined || !/^-?\d+$/.test(text)) return undefined;
  return Number(text);
}

function videosProtocol(
  knobs: FakeVideosSettings,
  jobs: Map<string, FakeVideoJob>,
  created: FakeVideoJob[],
  deleted: string[],
): FakeProtocol {
  return {
    errorBody,
    handle(request: FakeRequest, settings: FakeSettings): FakeReply {
      const { method, path } = request;
      const now = Date.now();
      if (method === "GET" && path === "/health") return { type: "empty", status: 200 };
      if (method === "GET" && path === "/v1/models") {
        const data = (settings.models ?? ["fake-video"]).map((id) => ({
          id,
          object: "model",
          owned_by: "fake",
        }));
        return json(200, { object: "list", data });
      }
      if (method === "POST" && path === "/v1/videos") return create(request, settings, now);
      if (method === "GET" && path === "/v1/videos") {
        return json(200, {
          object: "list",
          data: created.filter((job) => jobs.has(job.id)).map((job) => record(job, knobs, now)),
        });
      }
      const match = /^\/v1\/videos\/([^/]+)(\/content)?$/.exec(path);
      const id = match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
      const job = id === undefined ? undefined : jobs.get(id);
      if (match === null || id === undefined) return json(404, errorBody(404, "Not Found"));
      const look = method === "GET" && match[2] === undefined;
      if (look && knobs.statusUnavailable) return json(503, errorBody(503, "Service Unavailable"));
      if (job === undefined) return json(404, errorBody(404, `Video ${id} not found`));
      if (look) {
        const failed = phase(job, now).status === "failed";
        return json(failed ? (knobs.failedStatus ?? 200) : 200, record(job, knobs, now));
      }
      if (method === "GET") {
        if (phase(job, now).status !== "completed") {
          return json(400, errorBody(400, `Video ${id} is not completed`));
        }
        const body = knobs.garbageContent
          ? Buffer.from("<html>not a video</html>")
          : (knobs.clip ?? fixtureClip());
        return { type: "binary", status: 200, contentType: "video/mp4", body };
      }
      if (method === "DELETE" && match[2] === undefined) {
        jobs.delete(id);
        deleted.push(id);
        return json(200, { id, object: "video.deleted", deleted: true });
      }
      return json(404, errorBody(404, "Not Found"));
    },
  };

  function create(request: FakeRequest, settings: FakeSettings, now: number): FakeReply {
    const body = request.body;
    const prompt = field(body, "prompt");
    if (prompt === undefined || prompt.length === 0) return json(400, errorBody(400, "prompt is required"));
    const model = field(body, "model") ?? "fake-video";
    if (settings.models !== undefined && !settings.models.includes(model)) {
      return json(404, errorBody(404, `The model \`${model}\` does not exist.`));
    }
    const size = field(body, "size") ?? "1280x720";
    if (!/^\d+x\d+$/.test(size)) return json(400, errorBody(400, `Invalid size ${size}`));
    const job: FakeVideoJob = {
      id: `video_gen_${randomUUID().replaceAll("-", "")}`,
      model,
      prompt,
      size,
      seconds: numeric(field(body, "seconds")),
      fps: numeric(field(body, "fps")),
      frames: numeric(field(body, "num_frames")),
      seed: numeric(field(body, "seed")),
      form: isMultipart(body),
      createdAt: now,
      jobMs: knobs.jobMs,
      fails: knobs.failMidJob,
      failMessage: knobs.failMessage,
    };
    jobs.set(job.id, job);
    created.push(job);
    return json(200, record(job, knobs, now));
  }
}

/**
 * A fake OpenAI-style asynchronous video server (vLLM-Omni, SGLang diffusion): `POST /v1/videos`
 * (form or JSON) makes an in-memory job that goes queued → in_progress (progress rising) →
 * completed over `jobMs`, or failed halfway with `failMidJob`; `GET /v1/videos/{id}` reports it
 * (a failed job with the `failedStatus` error status as vLLM-Omni does, or 503 without a job while
 * `statusUnavailable`),
 * `GET /v1/videos/{id}/content` serves `clip` once completed (400 before), `DELETE` forgets it
 * (404 for an unknown id); `GET /v1/videos` lists, `GET /v1/models` lists `models`.
 */
export class FakeVideosServer extends FakeServer {
  readonly videos: FakeVideosSettings;
  /** Every job created, in order (also deleted ones). */
  readonly jobs: FakeVideoJob[];
  /** The ids deleted, in order. */
  readonly deletions: string[];
  private readonly live: Map<string, FakeVideoJob>;

  constructor(settings: Partial<FakeSettings & FakeVideosSettings> = {}) {
    const knobs: FakeVideosSettings = { ...DEFAULT_VIDEOS_SETTINGS };
    const live = new Map<string, FakeVideoJob>();
    const jobs: FakeVideoJob[] = [];
    const deletions: string[] = [];
    super(videosProtocol(knobs, live, jobs, deletions), {});
    this.videos = knobs;
    this.jobs = jobs;
    this.deletions = deletions;
    this.live = live;
    this.configure(settings);
  }

  /** Changes settings, the base ones and the videos knobs alike. */
  override configure(settings: Partial<FakeSettings & FakeVideosSettings>): void {
    super.configure(takeKnobs(settings, this.videos, VIDEOS_KEYS));
  }

  /** The last job created (throws when there is none). */
  get lastJob(): FakeVideoJob {
    const last = this.jobs.at(-1);
    if (last === undefined) throw new Error("the fake has made no video job");
    return last;
  }

  /** Forgets the requests, the jobs and the deletions. */
  override clearRequests(): void {
    super.clearRequests();
    this.jobs.length = 0;
    this.deletions.length = 0;
    this.live.clear();
  }
}
