import type { FastifyBaseLogger } from "fastify";
import { FakeImagesServer, FakeModerationServer, FakeOpenAiServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import type { STORE_KINDS } from "../helpers/test-store.ts";

/** The image tests' installation: zones ch-ti and ch-zh, an image machine and a moderation machine in each. */
export interface ImageStack {
  t: TestApp;
  key: string;
  keyId: string;
  /** The image machine of ch-ti (`ti-images`) and of ch-zh (`zh-images`). */
  tiImages: FakeImagesServer;
  zhImages: FakeImagesServer;
  tiModeration: FakeModerationServer;
  zhModeration: FakeModerationServer;
  /** The clock the app reads; tests move it. */
  clock: { at: number; now(): Date };
  /** POSTs a JSON body (or a raw string) to /v1/images/generations with a key (the stack's by default). */
  generate(body: unknown, options?: { key?: string; headers?: Record<string, string> }): Promise<Answer>;
  /** The usage records of a key (the stack's by default). */
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  usage(keyId?: string): Promise<any[]>;
  close(): Promise<void>;
}

/** An answer of the app, read whole. */
export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  body: any;
  bytes: Buffer;
}

/** The price of one picture: 0.01, 10,000 micro-units. */
export const PICTURE_MICROS = 10_000;

/** Reads a response whole, its body as JSON when it is JSON. */
export async function readAnswer(response: Response): Promise<Answer> {
  const bytes = Buffer.from(await response.arrayBuffer());
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString("utf8"));
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, bytes };
}

/** Starts the fakes and the app; `machines` and `config` replace or add to the defaults. */
export async function startImageStack(
  options: {
    store?: (typeof STORE_KINDS)[number];
    config?: Record<string, unknown>;
    /** `installation.content_checks`. */
    contentChecks?: Record<string, string>;
    /** Machines besides the stack's fakes (ComfyUI, failing ones...). */
    extraMachines?: Array<Record<string, unknown>>;
    /** Leave out the stack's image machines. */
    withoutImageMachines?: boolean;
    logger?: FastifyBaseLogger;
    /** `installation.trusted_networks`. */
    trustedNetworks?: string[];
    /** Keep the spec's 30 per minute of the endpoint (raised out of the way otherwise). */
    specEndpointLimit?: boolean;
  } = {},
): Promise<ImageStack> {
  const tiImages = new FakeImagesServer();
  const zhImages = new FakeImagesServer();
  const tiModeration = new FakeModerationServer();
  const zhModeration = new FakeModerationServer();
  const chat = new FakeOpenAiServer();
  const started = await Promise.all([
    tiImages.start(),
    zhImages.start(),
    tiModeration.start(),
    zhModeration.start(),
    chat.start(),
  ]);
  const [ti, zh, tiMod, zhMod, chatUrl] = started;
  const clock = {
    at: Date.now(),
    now: () => new Date(clock.at),
  };
  const t = await startTestApp({
    ...(options.store ? { store: options.store } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    now: () => clock.now(),
    config: {
      installation: {
        zones: [{ id: "ch-ti" }, { id: "ch-zh" }],
        ...(options.contentChecks ? { content_checks: options.contentChecks } : {}),
        ...(options.trustedNetworks ? { trusted_networks: options.trustedNetworks } : {}),
      },
      tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
      ...(options.specEndpointLimit
        ? {}
        : { rate_limits: { endpoint_limits: { image_generations: 100_000 } } }),
      prices: { image_per_picture: 0.01 },
      models: [
        { id: "z-image-turbo", kind: "image" },
        { id: "chat-1", kind: "chat" },
      ],
      machines: [
        ...(options.withoutImageMachines
          ? []
          : [
              {
                name: "ti-images",
                zone: "ch-ti",
                protocol: "images",
                url: ti.url,
                models: ["z-image-turbo"],
              },
              {
                name: "zh-images",
                zone: "ch-zh",
                protocol: "images",
                url: zh.url,
                models: ["z-image-turbo"],
              },
            ]),
        ...(options.extraMachines ?? []),
        { name: "ti-moderation", zone: "ch-ti", protocol: "moderation", url: tiMod.url },
        { name: "zh-moderation", zone: "ch-zh", protocol: "moderation", url: zhMod.url },
        { name: "ti-chat", zone: "ch-ti", protocol: "openai", url: chatUrl.url, models: ["chat-1"] },
      ],
      ...options.config,
    },
  });
  const { key, keyId } = await t.newKey();
  return {
    t,
    key,
    keyId,
    tiImages,
    zhImages,
    tiModeration,
    zhModeration,
    clock,
    async generate(body, opts = {}) {
      return readAnswer(
        await t.fetch("/v1/images/generations", {
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
    async usage(id = keyId) {
      // Usage records are written just after the answer.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const answer = await t.admin("GET", `/usage?key_id=${id}`);
      return answer.body?.data ?? [];
    },
    async close() {
      await t.close();
      await Promise.all(started.map((fake) => fake.close()));
    },
  };
}
