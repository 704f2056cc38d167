import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../../config/schema.ts";
import type { ConversationView } from "../../contract/app-api.ts";
import { itemNotFound } from "../../errors/catalogue.ts";
import type { JobQueue } from "../../jobs/job-queue.ts";
import type { Database } from "../../store/database.ts";
import { type ConversationRow, ConversationsRepository } from "../../store/repositories/conversations.ts";
import type { TextGeneration } from "../text/text-generation.ts";
import { ChatExchanges, type Exchange, type ExchangeContext, type OutgoingMessage } from "./chat-exchange.ts";
import { DEFAULT_TITLES } from "./chat-titles.ts";
import { conversationView, type WebConversationView, webConversationView } from "./chat-views.ts";
import { TitleWriter } from "./title-job.ts";

/** The conversation list shows at most this many. */
export const CONVERSATION_LIST_LIMIT = 200;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Conversations of the app API kept on the server (docs/app-chat.md): list, create, read,
 * rename, delete, and send a message with the answer streamed. A conversation that does not exist,
 * is another user's, or has a malformed id is the same 404. The automatic title runs as a
 * background job on `jobs`, which this service registers its worker on.
 */
export class ChatService {
  private readonly repo: ConversationsRepository;
  private readonly exchanges: ChatExchanges;
  private readonly defaultTitle: string;
  private readonly defaultLabel: string;
  /** The queue the automatic title job runs on (tests wait for it with `jobs.idle()`). */
  readonly jobs: JobQueue;
  /** Writes the automatic titles: the title job's runs (services/background-jobs.ts). */
  readonly titles: TitleWriter;

  constructor(deps: {
    config: Config;
    db: Database;
    text: TextGeneration;
    jobs: JobQueue;
    log?: FastifyBaseLogger | undefined;
  }) {
    this.repo = new ConversationsRepository(deps.db);
    this.jobs = deps.jobs;
    this.exchanges = new ChatExchanges({ repo: this.repo, text: deps.text, jobs: deps.jobs, log: deps.log });
    this.titles = new TitleWriter({ repo: this.repo, text: deps.text, log: deps.log });
    this.defaultTitle = DEFAULT_TITLES[deps.config.installation.language];
    this.defaultLabel = deps.config.app.default_chat_label;
  }

  /** The account's conversations, most recently updated first, without messages. */
  async list(accountId: string): Promise<ConversationView[]> {
    const rows = await this.repo.list(accountId, CONVERSATION_LIST_LIMIT);
    return rows.map((row) => conversationView(row));
  }

  /** A new conversation; a title given here counts as the user's and is never replaced. */
  async create(accountId: string, fields: { title?: string; model?: string }): Promise<ConversationView> {
    const row = await this.repo.create({
      accountId,
      title: fields.title ?? this.defaultTitle,
      titleSource: fields.title !== undefined ? "user" : "default",
      model: fields.model ?? this.defaultLabel,
    });
    return conversationView(row);
  }

  /** The account's conversation, or the 404 of the app API. */
  async find(accountId: string, id: string): Promise<ConversationRow> {
    const row = UUID.test(id) ? await this.repo.find(accountId, id) : undefined;
    if (!row) throw conversationNotFound();
    return row;
  }

  /** The conversation with all its messages, oldest first. */
  async get(accountId: string, id: string): Promise<ConversationView> {
    const row = await this.find(accountId, id);
    return conversationView(row, await this.repo.messages(row.id));
  }

  /** The conversation as the web chat reads it: each message also says whether it was stopped. */
  async getForWebChat(accountId: string, id: string): Promise<WebConversationView> {
    const row = await this.find(accountId, id);
    return webConversationView(row, await this.repo.messages(row.id));
  }

  /** Sets a title chosen by the user (never replaced by the automatic one). */
  async rename(conversation: ConversationRow, title: string): Promise<ConversationView> {
    const row = await this.repo.rename(conversation.accountId, conversation.id, title);
    if (!row) throw conversationNotFound();
    return conversationView(row, await this.repo.messages(row.id));
  }

  /** The account's archived conversations (web chat only), without messages, up to 200. */
  async listArchived(accountId: string): Promise<ConversationView[]> {
    const rows = await this.repo.listArchived(accountId, CONVERSATION_LIST_LIMIT);
    return rows.map((row) => conversationView(row));
  }

  /**
   * Archives a conversation (left out of `GET /chat/sessions`) or brings it
   * back; its messages stay. 404 like any other missing conversation.
   */
  async setArchived(accountId: string, id: string, archived: boolean): Promise<ConversationView> {
    const row = UUID.test(id) ? await this.repo.setArchived(accountId, id, archived) : undefined;
    if (!row) throw conversationNotFound();
    return conversationView(row);
  }

  async delete(accountId: string, id: string): Promise<void> {
    const deleted = UUID.test(id) && (await this.repo.delete(accountId, id));
    if (!deleted) throw conversationNotFound();
  }

  /** Saves the user message and starts the answer (see ChatExchanges). */
  send(conversation: ConversationRow, message: OutgoingMessage, context: ExchangeContext): Promise<Exchange> {
    return this.exchanges.send(conversation, message, context);
  }
}

function conversationNotFound() {
  return itemNotFound("Conversation not found.");
}
