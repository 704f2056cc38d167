import type { FastifyBaseLogger } from "fastify";
import type { JobQueue } from "../../jobs/job-queue.ts";
import { Upkeep } from "../../jobs/upkeep.ts";
import type { ConversationsRepository } from "../../store/repositories/conversations.ts";
import { FAILED_ANSWER } from "./chat-exchange.ts";
import { TITLE_JOB, type TitleJobData } from "./title-job.ts";

/** How often conversations whose title job was lost are looked for. */
export const TITLE_UPKEEP_EVERY_MS = 60_000;
// A title job normally ends within seconds of the answer; older ones were lost (a crash of the
// process that held it in memory, Redis emptied, or the queue away when the answer was saved).
const LOST_AFTER_MS = 60_000;
// Past a day the default title stays: the conversation has moved on.
const GIVE_UP_AFTER_MS = 24 * 60 * 60 * 1000;
const REQUEUE_BATCH = 500;

/**
 * Queues the automatic title again for conversations answered at least a minute ago that still
 * carry the default title, at start, every minute and when the queue's Redis is back, on every
 * instance (the queue keeps one entry per conversation, and the job writes only over the default).
 */
export class TitleUpkeep extends Upkeep {
  private readonly repo: ConversationsRepository;
  private readonly now: () => Date;

  constructor(deps: {
    repo: ConversationsRepository;
    queue: JobQueue;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    super("automatic-title upkeep", { queue: deps.queue, everyMs: TITLE_UPKEEP_EVERY_MS, log: deps.log });
    this.repo = deps.repo;
    this.now = deps.now;
  }

  protected pass(): Promise<unknown> {
    return this.requeue();
  }

  /** After an outage every untitled conversation is queued, however recent (see `requeue`). */
  protected override afterOutage(): void {
    this.requeue(0).catch((error: unknown) =>
      this.log?.warn({ err: error }, "automatic-title upkeep failed; trying again at the next run"),
    );
  }

  /**
   * Queues the title of every such conversation; returns how many. Right after an outage of the
   * queue every one is queued, however recent: those answered meanwhile could not queue theirs.
   */
  async requeue(lostAfterMs = LOST_AFTER_MS): Promise<number> {
    const now = this.now().getTime();
    const lost = await this.repo.untitledAnswered(
      { since: new Date(now - GIVE_UP_AFTER_MS), before: new Date(now - lostAfterMs) },
      FAILED_ANSWER,
      REQUEUE_BATCH,
    );
    for (const conversation of lost) {
      const data: TitleJobData = {
        conversationId: conversation.id,
        accountId: conversation.accountId,
        model: conversation.model,
        backend: conversation.backend,
        // The exchange's request id is not kept; one per conversation keeps the title's usage record single.
        requestId: `req_${conversation.id.replaceAll("-", "")}`,
      };
      await this.queue.add(TITLE_JOB, data, { id: `title-${conversation.id}` });
    }
    return lost.length;
  }
}
