import type { ServerResponse } from "node:http";
import type { ApiError } from "../errors/catalogue.ts";
import type { CounterSpec, CounterStore, TakeResult } from "./counter-store.ts";

const PENDING_REQUEST = Symbol("request with a pending key take");

type TaggedResponse = ServerResponse & { [PENDING_REQUEST]?: string };

/** A request's key limits not taken yet: its counters and what their outcome does to the request. */
export interface PendingTake {
  readonly counters: CounterSpec[];
  /** Sets the counted request's headers, or throws its 429; the take is done either way. */
  apply(result: TakeResult, now: number): void;
  /** Whether `apply` ran. */
  readonly done: boolean;
}

/**
 * Key limits whose take waits for the request's money hold, so that a request that holds money in
 * Redis is counted and held in one script call. Whatever path a request takes, its counters are
 * taken before its answer is written: by the hold, or else on their own, first thing when the
 * request ends in an error (a 429 then answers instead) or before a success is sent; a request
 * whose answer went out some other way (a stream, a client gone) is counted when its connection
 * closes. Counts stay exact: each take is one atomic step, only its moment moves.
 */
export class DeferredTakes {
  private readonly pending = new Map<string, PendingTake>();
  private readonly store: CounterStore;
  /** The app clock the counters' windows follow. */
  readonly now: () => Date;
  /** One listener for every response (no closure per request): counts what its request left. */
  private readonly countOnClose: (this: TaggedResponse) => void;

  constructor(store: CounterStore, now: () => Date) {
    this.store = store;
    this.now = now;
    const takes = this;
    this.countOnClose = function (this: TaggedResponse) {
      const requestId = this[PENDING_REQUEST];
      if (requestId !== undefined) takes.leftover(requestId);
    };
  }

  /** Leaves a request's take for later; counted at the latest when its response closes. */
  defer(requestId: string, take: PendingTake, response: ServerResponse): void {
    this.pending.set(requestId, take);
    (response as TaggedResponse)[PENDING_REQUEST] = requestId;
    response.on("close", this.countOnClose);
  }

  has(requestId: string): boolean {
    return this.pending.has(requestId);
  }

  /** Removes and returns a request's pending take: the caller takes it. */
  claim(requestId: string): PendingTake | undefined {
    const take = this.pending.get(requestId);
    if (take) this.pending.delete(requestId);
    return take;
  }

  /** Takes a claimed take on its own: the headers are set, or its 429 is thrown. */
  async takeNow(take: PendingTake): Promise<void> {
    if (take.done) return;
    const now = this.now().getTime();
    take.apply(await this.store.take(take.counters, now), now);
  }

  /** Before a request's answer is written: its pending counters taken, and the 429 to answer instead when refused. */
  async before(requestId: string): Promise<ApiError | undefined> {
    const take = this.claim(requestId);
    if (!take) return undefined;
    try {
      await this.takeNow(take);
      return undefined;
    } catch (error) {
      return error as ApiError;
    }
  }

  /** A request that ended without its take: counted now, never refused (its answer is out). */
  leftover(requestId: string): void {
    const take = this.claim(requestId);
    if (!take) return;
    void this.store.take(take.counters, this.now().getTime()).catch(() => {});
  }
}
