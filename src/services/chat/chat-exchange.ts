import type { FastifyBaseLogger } from "fastify";
import { TIER_NAMES, type TierName } from "../../config/schema.ts";
import type { ChatErrorCode, ChatEvent } from "../../contract/app-api.ts";
import { type ChatCall, type ChatChunk, type TokenUsage, UpstreamError } from "../../engines/types.ts";
import { ApiError, itemNotFound } from "../../errors/catalogue.ts";
import type { JobQueue } from "../../jobs/job-queue.ts";
import type { ConversationRow, ConversationsRepository } from "../../store/repositories/conversations.ts";
import type { GenerationContext, Placed, TextGeneration } from "../text/text-generation.ts";
import { estimateChatInput } from "../text/token-bounds.ts";
import { TITLE_JOB, type TitleJobData } from "./title-job.ts";

/** A message to send, validated. */
export interface OutgoingMessage {
  content: string;
  /** A model id; one the catalogue does not have fails inside the stream (`upstream_error`). */
  model: string;
  /** Absent: the tier of the conversation's previous message, `slow` for the first. */
  tier?: TierName;
  /** A machine family to try first; remembered on the conversation. Absent: the remembered one. */
  backend?: string;
}

/** An answer under way: the zone serving it (null when it failed before a machine took it) and its events. */
export interface Exchange {
  zone: string | null;
  events: AsyncIterable<ChatEvent>;
}

/** What an assistant message says when the model did not answer: always this English text. */
export const FAILED_ANSWER = "The model did not answer. Please try again.";

// How long the end of an answer waits for the title job to be queued.
const QUEUE_WAIT_MS = 2_000;

/** The context of the request, without what the exchange decides itself (tier, preferred family). */
export type ExchangeContext = Omit<GenerationContext, "tier" | "preferFamily">;

interface Answer {
  conversation: ConversationRow;
  call: ChatCall;
  tier: TierName;
  backend: string | undefined;
  /** No earlier exchange of the conversation got a non-empty answer: this one may start the automatic title. */
  firstAnswer: boolean;
  context: GenerationContext;
  started: number;
}

/**
 * One exchange of a conversation (docs/app-chat.md#send-a-message). The user message is saved
 * before the answer starts, with the whole history sent to the model; the assistant message is
 * saved when the answer ends: the answer with its token counts, what was generated when the client
 * went away (the text service settles that part), or a fixed failure text when the model or machine
 * failed, before or during the answer (the partial answer is then dropped and nothing is charged).
 * Every user message is followed by an assistant message, so the history always alternates.
 */
export class ChatExchanges {
  private readonly repo: ConversationsRepository;
  private readonly text: TextGeneration;
  private readonly jobs: JobQueue;
  private readonly log: Pick<FastifyBaseLogger, "warn" | "error"> | undefined;

  constructor(deps: {
    repo: ConversationsRepository;
    text: TextGeneration;
    jobs: JobQueue;
    log?: Pick<FastifyBaseLogger, "warn" | "error"> | undefined;
  }) {
    this.repo = deps.repo;
    this.text = deps.text;
    this.jobs = deps.jobs;
    this.log = deps.log;
  }

  /** Saves the user message and starts the answer; resolves once a machine took it or it failed. */
  async send(
    conversation: ConversationRow,
    message: OutgoingMessage,
    context: ExchangeContext,
  ): Promise<Exchange> {
    const started = performance.now();
    const history = await this.repo.messages(conversation.id);
    const tier = message.tier ?? tierOf(history.at(-1)?.tier) ?? "slow";
    const backend = message.backend ?? conversation.backend ?? undefined;
    const saved = await this.repo.append(
      conversation.id,
      { role: "user", content: message.content, model: message.model, tier },
      { model: message.model, ...(message.backend !== undefined ? { backend: message.backend } : {}) },
    );
    if (!saved) throw itemNotFound("Conversation not found.");
    const call: ChatCall = {
      model: message.model,
      messages: [
        ...history.map((row) => ({
          role: row.role === "user" ? ("user" as const) : ("assistant" as const),
          content: row.content,
        })),
        { role: "user", content: message.content },
      ],
      params: {},
    };
    const answer: Answer = {
      conversation: saved.conversation,
      call,
      tier,
      backend,
      firstAnswer: !history.some((row) => row.role === "assistant" && isAnswer(row.content)),
      context: { ...context, tier, ...(backend !== undefined ? { preferFamily: backend } : {}) },
      started,
    };
    let placed: Placed<AsyncIterable<ChatChunk>>;
    try {
      placed = await this.text.chatStream(call, answer.context);
    } catch (error) {
      if (context.signal.aborted) {
        // The client left before a machine took the answer: nothing was generated, nothing is charged.
        await this.saveAnswer(answer, "", usageOf(0, 0), true);
        return { zone: null, events: noEvents() };
      }
      return { zone: null, events: this.failed(answer, error) };
    }
    return { zone: placed.zone, events: this.stream(answer, placed.result) };
  }

  private async *stream(answer: Answer, chunks: AsyncIterable<ChatChunk>): AsyncGenerator<ChatEvent> {
    let content = "";
    let usage: TokenUsage | undefined;
    let failure: unknown;
    try {
      for await (const chunk of chunks) {
        if (chunk.usage) usage = chunk.usage;
        for (const choice of chunk.choices) {
          const piece = choice.delta.content;
          if (!piece) continue;
          content += piece;
          yield { type: "delta", text: piece };
        }
      }
    } catch (error) {
      failure = error;
    }
    const cut = answer.context.signal.aborted;
    if (failure !== undefined && !cut) {
      yield* this.failed(answer, failure);
      return;
    }
    // Counted as the text service bills it: the upstream's count, else (a cut answer) an estimate.
    const counted = usage ?? usageOf(estimateChatInput(answer.call), Math.ceil(content.length / 4));
    const titleJobQueued = await this.saveAnswer(answer, content, counted, cut);
    yield {
      type: "done",
      prompt_tokens: counted.prompt_tokens,
      completion_tokens: counted.completion_tokens,
      latency_ms: elapsed(answer.started),
      outcome: "ok",
      title_job_queued: titleJobQueued,
    };
  }

  private async *failed(answer: Answer, error: unknown): AsyncGenerator<ChatEvent> {
    if (!(error instanceof ApiError) && !(error instanceof UpstreamError)) {
      this.log?.error({ err: error }, "chat answer failed");
    }
    await this.saveAnswer(answer, FAILED_ANSWER, usageOf(0, 0));
    yield { type: "error", ...failureOf(error) };
    yield {
      type: "done",
      prompt_tokens: 0,
      completion_tokens: 0,
      latency_ms: elapsed(answer.started),
      outcome: "error",
      title_job_queued: false,
    };
  }

  /**
   * Saves the assistant message (`stopped`: its client closed the stream); queues the automatic
   * title when due. Whether it was queued.
   */
  private async saveAnswer(
    answer: Answer,
    content: string,
    usage: TokenUsage,
    stopped = false,
  ): Promise<boolean> {
    const saved = await this.repo.append(answer.conversation.id, {
      role: "assistant",
      content,
      model: answer.call.model,
      tier: answer.tier,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      stopped,
    });
    if (!saved) return false; // deleted while the answer ran
    const due = answer.firstAnswer && isAnswer(content) && saved.conversation.titleSource === "default";
    if (!due) return false;
    const data: TitleJobData = {
      conversationId: saved.conversation.id,
      accountId: saved.conversation.accountId,
      model: answer.call.model,
      backend: answer.backend ?? null,
      requestId: answer.context.requestId,
    };
    const queued = this.jobs.add(TITLE_JOB, data, { id: `title-${saved.conversation.id}` }).then(
      () => true,
      (error: unknown) => {
        this.log?.warn({ err: error }, "automatic title: the job could not be queued");
        return false;
      },
    );
    // `done` does not wait for an unreachable Redis: the title then stays the default one.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), QUEUE_WAIT_MS);
    });
    try {
      return await Promise.race([queued, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Whether an assistant message holds an answer (not empty, not the failure text). */
function isAnswer(content: string): boolean {
  return content !== FAILED_ANSWER && content.trim() !== "";
}

/** What the `error` event says: the placement's own code when no machine could take the answer. */
function failureOf(error: unknown): { code: ChatErrorCode; message: string } {
  if (error instanceof ApiError) {
    if (error.code === "zone_unavailable" || error.code === "model_unavailable") {
      return { code: error.code, message: error.message };
    }
    return { code: "upstream_error", message: error.message };
  }
  const message =
    error instanceof UpstreamError && error.kind === "timeout"
      ? "The model stopped answering before the answer was complete (timeout)."
      : "The model stopped answering before the answer was complete.";
  return { code: "upstream_error", message };
}

/** The tier a stored message was sent at, if it names one. */
function tierOf(tier: string | undefined): TierName | undefined {
  return TIER_NAMES.find((name) => name === tier);
}

async function* noEvents(): AsyncGenerator<ChatEvent> {}

function usageOf(prompt: number, completion: number): TokenUsage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function elapsed(started: number): number {
  return Math.max(0, Math.round(performance.now() - started));
}
