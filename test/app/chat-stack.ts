import { expect } from "vitest";
import type { JobHandler, JobHooks, JobOptions, JobQueue } from "../../src/jobs/job-queue.ts";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import type { STORE_KINDS } from "../helpers/test-store.ts";
import type { AppUserHandle } from "./app-helpers.ts";

/** Chat model of the stack: 1 per million input tokens, 2 per million output tokens. */
export const CHAT_MODEL = "gemma3.8-27b";
/** A model of the catalogue that is not a chat model. */
export const EMBEDDING_MODEL = "bge-m3";

/**
 * The service over fake vLLM machines for the chat sessions: `alpha` (zone ch-ti, family `alpha`)
 * and `beta` (zone ch-zh, family `beta`) in the installation's zones, and `outside` in the
 * fallback zone ch-fb, which is not one of them: a chat answer must never go there.
 */
export interface ChatStack {
  t: TestApp;
  alpha: FakeOpenAiServer;
  beta: FakeOpenAiServer;
  outside: FakeOpenAiServer;
  /** The fakes of the installation's zones, by machine name. */
  machines: Record<"ti-alpha" | "zh-beta", FakeOpenAiServer>;
  /** Every chat request the fakes received, with the machine that got it (alpha's, beta's, outside's). */
  chatRequests(): Array<{ machine: string; body: { messages: Array<{ role: string; content: string }> } }>;
  /** Normal mode, no delays, no logged requests, every circuit breaker closed. */
  reset(): Promise<void>;
  /** Waits until no background job is waiting or running. */
  jobsIdle(): Promise<void>;
  close(): Promise<void>;
}

export async function startChatStack(
  options: {
    store?: (typeof STORE_KINDS)[number];
    language?: string;
    jobQueue?: JobQueue;
    config?: Record<string, unknown>;
    now?: () => Date;
  } = {},
): Promise<ChatStack> {
  const alpha = new FakeOpenAiServer();
  const beta = new FakeOpenAiServer();
  const outside = new FakeOpenAiServer();
  const [a, b, o] = await Promise.all([alpha.start(), beta.start(), outside.start()]);
  const t = await startTestApp({
    ...(options.store ? { store: options.store } : {}),
    ...(options.jobQueue ? { jobQueue: options.jobQueue } : {}),
    ...(options.now ? { now: options.now } : {}),
    config: {
      installation: {
        zones: [{ id: "ch-ti" }, { id: "ch-zh" }],
        fallback_zone: "ch-fb",
        ...(options.language ? { language: options.language } : {}),
      },
      models: [
        {
          id: CHAT_MODEL,
          kind: "chat",
          prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 },
        },
        { id: EMBEDDING_MODEL, kind: "embedding" },
      ],
      machines: [
        {
          name: "ti-alpha",
          zone: "ch-ti",
          protocol: "openai",
          url: a.url,
          models: [CHAT_MODEL],
          family: "alpha",
        },
        {
          name: "zh-beta",
          zone: "ch-zh",
          protocol: "openai",
          url: b.url,
          models: [CHAT_MODEL],
          family: "beta",
        },
        {
          name: "fb-outside",
          zone: "ch-fb",
          protocol: "openai",
          url: o.url,
          models: [CHAT_MODEL],
          family: "alpha",
        },
      ],
      ...options.config,
    },
  });
  const named = { "ti-alpha": alpha, "zh-beta": beta, "fb-outside": outside };
  return {
    t,
    alpha,
    beta,
    outside,
    machines: { "ti-alpha": alpha, "zh-beta": beta },
    chatRequests() {
      return Object.entries(named).flatMap(([machine, fake]) =>
        fake.requestsTo("/v1/chat/completions").map((request) => ({ machine, body: request.body as never })),
      );
    },
    async reset() {
      for (const fake of Object.values(named)) {
        await fake.setMode("normal", { chunkDelayMs: 0, chunks: undefined, dropAfterChunks: 2 });
        fake.clearRequests();
      }
      for (const machine of t.app.services.engines.machines) machine.breaker.success();
    },
    jobsIdle: () => t.app.services.jobs.idle(),
    async close() {
      await t.close();
      await Promise.all([a.close(), b.close(), o.close()]);
    },
  };
}

/** One event of the answer stream. */
// biome-ignore lint/suspicious/noExplicitAny: assertions check the events' shape
export type StreamEvent = Record<string, any>;

/** Reads a whole answer stream, checking its framing: only `data: <json>` lines, each then an empty line. */
export async function readEvents(response: Response): Promise<StreamEvent[]> {
  const text = await response.text();
  expect(text).toMatch(/^(data: [^\n]+\n\n)*$/);
  return text
    .split("\n\n")
    .filter((block) => block.length > 0)
    .map((block) => JSON.parse(block.slice("data: ".length)) as StreamEvent);
}

/** Sends a message and reads the whole stream. */
export async function sendMessage(
  user: AppUserHandle,
  conversationId: string,
  body: Record<string, unknown>,
): Promise<{ response: Response; events: StreamEvent[] }> {
  const response = await user.post(`/chat/sessions/${conversationId}/messages`, body);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return { response, events: await readEvents(response) };
}

/** Creates a conversation and returns its id. */
export async function newConversation(
  user: AppUserHandle,
  body: Record<string, unknown> = {},
): Promise<string> {
  const response = await user.post("/chat/sessions", body);
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** The conversation as `GET /chat/sessions/{id}` shows it. */
// biome-ignore lint/suspicious/noExplicitAny: assertions check the body's shape
export async function readConversation(user: AppUserHandle, id: string): Promise<any> {
  const response = await user.fetch(`/chat/sessions/${id}`);
  expect(response.status).toBe(200);
  return response.json();
}

/** The conversation as the web chat reads it (`GET /web/chat/sessions/{id}`): stopped answers marked. */
// biome-ignore lint/suspicious/noExplicitAny: assertions check the body's shape
export async function readWebConversation(user: AppUserHandle, id: string): Promise<any> {
  const response = await user.fetch(`/web/chat/sessions/${id}`);
  expect(response.status).toBe(200);
  return response.json();
}

/** The fields of a message of the app API (spec "Resources": Message), no more. */
export const MESSAGE_FIELDS = [
  "completion_tokens",
  "content",
  "created_at",
  "id",
  "latency_ms",
  "prompt_tokens",
  "role",
];

/** The text the fake model answers to a message (see test/fakes/fake-generation.ts). */
export function echoOf(text: string): string {
  return `echo: ${text}`;
}

/** Polls (the answer of a cut stream is saved just after the connection closed) until `check` passes. */
export async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 200 && !check(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    value = await read();
  }
  return value;
}

/**
 * A queue that holds the jobs added to it until `release`, then hands them to a real queue: a test
 * decides when the automatic title job runs (to change the machines or rename the conversation first).
 */
export class HeldJobs implements JobQueue {
  readonly kind: JobQueue["kind"];
  private readonly inner: JobQueue;
  private held: Array<{ name: string; data: unknown; options: JobOptions | undefined }> = [];
  /** The hooks registered with each job name: a test gives a job up through them. */
  readonly hooks = new Map<string, JobHooks<unknown>>();

  constructor(inner: JobQueue) {
    this.inner = inner;
    this.kind = inner.kind;
  }

  /** Jobs added and not released yet. */
  get waiting(): number {
    return this.held.length;
  }

  work<T>(name: string, handler: JobHandler<T>, hooks: JobHooks<T> = {}): void {
    this.hooks.set(name, hooks as JobHooks<unknown>);
    this.inner.work(name, handler, hooks);
  }

  async add<T>(name: string, data: T, options?: JobOptions): Promise<void> {
    this.held.push({ name, data, options });
  }

  /** Forgets the held jobs, as a queue that lost them (a process that died, Redis emptied). */
  forget(): void {
    this.held = [];
  }

  /** Hands the held jobs to the real queue. */
  async release(): Promise<void> {
    const jobs = this.held;
    this.held = [];
    for (const job of jobs) await this.inner.add(job.name, job.data, job.options);
  }

  idle(): Promise<void> {
    return this.inner.idle();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
