import type { FastifyBaseLogger } from "fastify";
import type { JobQueue } from "../../src/jobs/job-queue.ts";
import type { Store } from "../../src/store/database.ts";
import { FakeModerationServer, FakeVideosServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import type { STORE_KINDS } from "../helpers/test-store.ts";
import { type Answer, readAnswer } from "../images/image-stack.ts";

export { type Answer, readAnswer } from "../images/image-stack.ts";

/** The video tests' installation: zones ch-ti and ch-zh, a video machine and a moderation machine in each. */
export interface VideoStack {
  t: TestApp;
  key: string;
  keyId: string;
  accountId: string;
  /** The video machine of ch-ti (`ti-videos`) and of ch-zh (`zh-videos`). */
  tiVideos: FakeVideosServer;
  zhVideos: FakeVideosServer;
  tiModeration: FakeModerationServer;
  zhModeration: FakeModerationServer;
  /** The clock the app reads; tests move it. */
  clock: { at: number; now(): Date };
  /** POSTs a JSON body (or a raw string) to /v1/videos with a key (the stack's by default). */
  create(body: unknown, options?: { key?: string; headers?: Record<string, string> }): Promise<Answer>;
  /** A key-API call with the stack's key (or another). */
  call(method: string, path: string, options?: { key?: string }): Promise<Answer>;
  /** Polls the job until its status is one of `statuses` (completed or failed by default). */
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  waitFor(id: string, statuses?: string[], options?: { key?: string }): Promise<any>;
  /** The usage records of a key (the stack's by default). */
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  usage(keyId?: string): Promise<any[]>;
  close(): Promise<void>;
}

/** The price of one second of video: 0.02, 20,000 micro-units. */
export const SECOND_MICROS = 20_000;

/** Options of a video stack. */
export interface VideoStackOptions {
  store?: (typeof STORE_KINDS)[number] | Store;
  config?: Record<string, unknown>;
  /** `installation.content_checks`. */
  contentChecks?: Record<string, string>;
  /** Machines besides the stack's fakes. */
  extraMachines?: Array<Record<string, unknown>>;
  /** Leave out the stack's video machines. */
  withoutVideoMachines?: boolean;
  /** Capacity of each video machine (1 by default). */
  capacity?: number;
  logger?: FastifyBaseLogger;
  /** Keep the spec's per-minute limits of the endpoints (raised out of the way otherwise). */
  specEndpointLimits?: boolean;
  /** Fakes to reuse (a restarted app in front of the same machines). */
  fakes?: {
    tiVideos: FakeVideosServer;
    zhVideos: FakeVideosServer;
    tiModeration: FakeModerationServer;
    zhModeration: FakeModerationServer;
  };
  durableQueue?: JobQueue;
  /** An existing key to use instead of a new account. */
  existingKey?: { key: string; keyId: string; accountId: string };
  clock?: { at: number; now(): Date };
}

const RAISED = {
  video_create: 100_000,
  video_list: 100_000,
  video_retrieve: 100_000,
  video_content: 100_000,
  video_delete: 100_000,
};

/** Starts the fakes (unless given) and the app. */
export async function startVideoStack(options: VideoStackOptions = {}): Promise<VideoStack> {
  const own = options.fakes === undefined;
  const fakes = options.fakes ?? {
    tiVideos: new FakeVideosServer({ jobMs: 150 }),
    zhVideos: new FakeVideosServer({ jobMs: 150 }),
    tiModeration: new FakeModerationServer(),
    zhModeration: new FakeModerationServer(),
  };
  const servers = [fakes.tiVideos, fakes.zhVideos, fakes.tiModeration, fakes.zhModeration];
  if (own) await Promise.all(servers.map((server) => server.start()));
  const capacity = options.capacity ?? 1;
  const clock: { at: number; now(): Date } = options.clock ?? {
    at: Date.now(),
    now: (): Date => new Date(clock.at),
  };
  const t = await startTestApp({
    ...(options.store ? { store: options.store } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.durableQueue ? { durableQueue: options.durableQueue } : {}),
    now: () => clock.now(),
    config: {
      installation: {
        zones: [{ id: "ch-ti" }, { id: "ch-zh" }],
        ...(options.contentChecks ? { content_checks: options.contentChecks } : {}),
      },
      tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
      ...(options.specEndpointLimits ? {} : { rate_limits: { endpoint_limits: RAISED } }),
      prices: { video_per_second: 0.02 },
      engines: { video_poll_interval_seconds: 0.02 },
      models: [{ id: "wan-2.2-5b-fast", kind: "video" }],
      machines: [
        ...(options.withoutVideoMachines
          ? []
          : [
              {
                name: "ti-videos",
                zone: "ch-ti",
                protocol: "videos",
                url: fakes.tiVideos.url,
                models: ["wan-2.2-5b-fast"],
                capacity,
              },
              {
                name: "zh-videos",
                zone: "ch-zh",
                protocol: "videos",
                url: fakes.zhVideos.url,
                models: ["wan-2.2-5b-fast"],
                capacity,
              },
            ]),
        ...(options.extraMachines ?? []),
        { name: "ti-moderation", zone: "ch-ti", protocol: "moderation", url: fakes.tiModeration.url },
        { name: "zh-moderation", zone: "ch-zh", protocol: "moderation", url: fakes.zhModeration.url },
      ],
      ...options.config,
    },
  });
  const { key, keyId, accountId } = options.existingKey ?? (await t.newKey());
  const call: VideoStack["call"] = async (method, path, opts = {}) =>
    readAnswer(await t.fetch(path, { method, headers: { authorization: `Bearer ${opts.key ?? key}` } }));
  return {
    t,
    key,
    keyId,
    accountId,
    ...fakes,
    clock,
    async create(body, opts = {}) {
      return readAnswer(
        await t.fetch("/v1/videos", {
          method: "POST",
          headers: {
            authorization: `Bearer ${opts.key ?? key}`,
            "content-type": "application/json",
            ...opts.headers,
          },
          body: typeof body === "string" ? body : JSON.stringify(body),
        }),
      );
    },
    call,
    async waitFor(id, statuses = ["completed", "failed"], opts = {}) {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const answer = await call("GET", `/v1/videos/${id}`, opts);
        if (answer.status !== 200) throw new Error(`GET /v1/videos/${id}: ${answer.status} ${answer.bytes}`);
        if (statuses.includes(answer.body.status)) return answer.body;
        if (Date.now() > deadline) throw new Error(`video ${id} still ${answer.body.status}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async usage(id = keyId) {
      const answer = await t.admin("GET", `/usage?key_id=${id}`);
      return answer.body?.data ?? [];
    },
    async close() {
      await t.close();
      if (own) await Promise.all(servers.map((server) => server.close()));
    },
  };
}
