import type { FastifyBaseLogger } from "fastify";
import type { Payer } from "../../billing/payer.ts";
import type { ConversationsRepository } from "../../store/repositories/conversations.ts";
import { characterCount } from "../text/character-count.ts";
import type { TextGeneration } from "../text/text-generation.ts";
import { cleanGeneratedTitle, SHORT_MESSAGE_CHARACTERS, titleFromMessage } from "./chat-titles.ts";

/** The name of the automatic title job. */
export const TITLE_JOB = "chat.title";

/** What the automatic title job needs; JSON, as queues keep it. */
export interface TitleJobData {
  conversationId: string;
  accountId: string;
  /** The chat model of the first message, which writes the title. */
  model: string;
  /** The machine family the conversation prefers. */
  backend: string | null;
  /** The request id of the exchange; the title's usage record is `<it>_title`. */
  requestId: string;
}

const TITLE_INSTRUCTION =
  "Write a short title for a conversation that begins with the user's next message. " +
  "Use at most 8 words, in the language of the message. Answer with the title only: " +
  "no quotes, no punctuation at the end, no explanation.";
// A title is a few words; this also keeps the reservation small.
const TITLE_MAX_TOKENS = 32;

/**
 * Writes the automatic title of a conversation (docs/app-chat.md#automatic-title).
 * A first message under 12 characters is the title unchanged; otherwise the chat model of the first
 * message is asked for a short title through the text service (the installation's zones, billed to
 * the account as `app.chat.title` at the slow tier, like any generation); any failure gives the
 * beginning of the first message. The title is written only while the title is still the default
 * one, in the same statement that checks it, so a title the user set, even while the job ran, stays.
 * Idempotent: a second run finds the title set and does nothing, and its usage record would have
 * the same request id.
 */
export class TitleWriter {
  private readonly repo: ConversationsRepository;
  private readonly text: TextGeneration;
  private readonly log: Pick<FastifyBaseLogger, "warn"> | undefined;

  constructor(deps: {
    repo: ConversationsRepository;
    text: TextGeneration;
    log?: Pick<FastifyBaseLogger, "warn"> | undefined;
  }) {
    this.repo = deps.repo;
    this.text = deps.text;
    this.log = deps.log;
  }

  async write(data: TitleJobData, signal: AbortSignal): Promise<void> {
    await this.writeWith(data, (message) => this.generate(data, message, signal));
  }

  /** A job the queue gave up (its runs stopped the service) ends as a failed generation does. */
  async givenUp(data: TitleJobData): Promise<void> {
    await this.writeWith(data, async () => undefined);
  }

  private async writeWith(
    data: TitleJobData,
    generate: (message: string) => Promise<string | undefined>,
  ): Promise<void> {
    const conversation = await this.repo.findById(data.conversationId);
    if (conversation?.titleSource !== "default") return;
    const first = await this.repo.firstUserMessage(data.conversationId);
    if (!first) return;
    const title =
      characterCount(first.content) < SHORT_MESSAGE_CHARACTERS
        ? first.content
        : ((await generate(first.content)) ?? titleFromMessage(first.content));
    await this.repo.setAutomaticTitle(data.conversationId, title);
  }

  /** The model's title, or undefined when it failed or said nothing usable. */
  private async generate(
    data: TitleJobData,
    message: string,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    if (signal.aborted) return undefined;
    const payer: Payer = { keyId: null, accountId: data.accountId, zones: null, monthlyLimitMicros: null };
    try {
      const placed = await this.text.chat(
        {
          model: data.model,
          messages: [
            { role: "system", content: TITLE_INSTRUCTION },
            { role: "user", content: message },
          ],
          params: { max_tokens: TITLE_MAX_TOKENS, temperature: 0.2 },
        },
        {
          requestId: `${data.requestId}_title`,
          principal: payer,
          tier: "slow",
          endpoint: "app.chat.title",
          signal,
          ...(data.backend !== null ? { preferFamily: data.backend } : {}),
        },
      );
      const title = cleanGeneratedTitle(placed.result.choices[0]?.message.content ?? "");
      return title.length > 0 ? title : undefined;
    } catch (error) {
      this.log?.warn({ err: error, conversation: data.conversationId }, "automatic title: the model failed");
      return undefined;
    }
  }
}
