import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { InProcessQueue } from "../../src/jobs/in-process-queue.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { type AppUserHandle, signedInUser } from "./app-helpers.ts";
import {
  CHAT_MODEL,
  type ChatStack,
  HeldJobs,
  newConversation,
  readConversation,
  sendMessage,
  startChatStack,
} from "./chat-stack.ts";

const MINUTE = 60_000;

describe.each(STORE_KINDS)("Automatic title whose job was lost (jobs are not lost; %s)", (store) => {
  let s: ChatStack;
  let held: HeldJobs;
  let user: AppUserHandle;
  let offsetMs = 0;

  beforeAll(async () => {
    held = new HeldJobs(new InProcessQueue());
    s = await startChatStack({
      store,
      jobQueue: held,
      language: "en",
      now: () => new Date(Date.now() + offsetMs),
    });
    user = await signedInUser(s.t);
  });
  afterAll(() => s?.close());
  beforeEach(async () => {
    offsetMs = 0;
    held.forget();
    await s.reset();
  });

  const requeue = () => s.t.app.services.titleUpkeep.requeue();
  const runJobs = async () => {
    await held.release();
    await s.jobsIdle();
  };
  async function answeredThenLost(content: string): Promise<string> {
    const id = await newConversation(user);
    const { events } = await sendMessage(user, id, { content, model: CHAT_MODEL });
    expect(events.at(-1)).toMatchObject({ outcome: "ok", title_job_queued: true });
    held.forget();
    return id;
  }

  it("queued again once the answer is a minute old (not before), and the title is written", async () => {
    const id = await answeredThenLost("Ciao!");
    await requeue();
    expect(held.waiting).toBe(0);
    offsetMs = MINUTE + 1_000;
    await requeue();
    expect(held.waiting).toBeGreaterThanOrEqual(1);
    await runJobs();
    expect(await readConversation(user, id)).toMatchObject({ title: "Ciao!" });
    // Titled now: a later pass leaves it alone.
    await requeue();
    expect(held.waiting).toBe(0);
  });

  it("left alone: a title the user set, a conversation without an answer, and an answer more than a day old", async () => {
    const renamed = await answeredThenLost("Hello there, how are you?");
    expect((await user.post(`/chat/sessions/${renamed}`, { title: "Mine" }, "PATCH")).status).toBe(200);
    await newConversation(user);
    const lost = await answeredThenLost("An old question");
    // A day and an hour later: nothing is queued, the lost one included.
    offsetMs = 25 * 60 * MINUTE;
    await requeue();
    expect(held.waiting).toBe(0);
    // A minute later: the lost one alone.
    offsetMs = MINUTE + 1_000;
    await requeue();
    expect(held.waiting).toBe(1);
    await runJobs();
    expect(await readConversation(user, renamed)).toMatchObject({ title: "Mine" });
    expect((await readConversation(user, lost)).title).not.toBe("New chat");
  });
});
