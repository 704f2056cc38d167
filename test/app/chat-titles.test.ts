import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { InProcessQueue } from "../../src/jobs/in-process-queue.ts";
import type { JobQueue } from "../../src/jobs/job-queue.ts";
import { cleanGeneratedTitle, titleFromMessage } from "../../src/services/chat/chat-titles.ts";
import { TITLE_JOB, type TitleJobData } from "../../src/services/chat/title-job.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { bullQueue, dropJobKeys, TEST_REDIS_URL, uniqueJobsPrefix } from "../jobs/job-fixtures.ts";
import { type AppUserHandle, signedInUser } from "./app-helpers.ts";
import {
  CHAT_MODEL,
  type ChatStack,
  echoOf,
  eventually,
  HeldJobs,
  newConversation,
  readConversation,
  sendMessage,
  startChatStack,
} from "./chat-stack.ts";

describe("Conversation title: the beginning of the first message (used when generation fails)", () => {
  const cases: Array<[string, string]> = [
    ["Short enough to keep whole", "Short enough to keep whole"],
    ["  spaces\n\tand   lines  are  folded ", "spaces and lines are folded"],
    [
      "Vorrei sapere quali sono i migliori sentieri escursionistici in Valle Maggia durante l'estate",
      "Vorrei sapere quali sono i migliori sentieri…",
    ],
    // Exactly 60 characters: kept whole, no ellipsis.
    [`${"a".repeat(30)} ${"b".repeat(29)}`, `${"a".repeat(30)} ${"b".repeat(29)}`],
    // The 60th character is a space: the first 59 are whole words.
    [`${"a".repeat(59)} more words`, `${"a".repeat(59)}…`],
    // One word longer than 60 characters is cut where the room ends.
    ["x".repeat(100), `${"x".repeat(59)}…`],
  ];
  it.each(cases)("%j -> %j (at most 60 characters, cut at a word, with …)", (message, title) => {
    expect(titleFromMessage(message)).toBe(title);
    expect([...titleFromMessage(message)].length).toBeLessThanOrEqual(60);
  });
});

describe("Conversation title: a generated title is cleaned (one line, no quotes, at most 255 characters)", () => {
  const cases: Array<[string, string]> = [
    ["Hiking in Valle Maggia", "Hiking in Valle Maggia"],
    ['"Hiking in Valle Maggia"', "Hiking in Valle Maggia"],
    ["«Sentieri in Valle Maggia»", "Sentieri in Valle Maggia"],
    ["Title: “Hiking in Ticino”", "Hiking in Ticino"],
    ["**Hiking in Ticino**", "Hiking in Ticino"],
    ["# Hiking in Ticino.", "Hiking in Ticino"],
    ["\n\n  Hiking   in Ticino\nSecond line explaining", "Hiking in Ticino"],
    ["   \n  ", ""],
    ["w".repeat(300), "w".repeat(255)],
  ];
  it.each(cases)("%j -> %j", (answer, title) => {
    expect(cleanGeneratedTitle(answer)).toBe(title);
  });
});

const SETUPS: Array<{
  name: string;
  store: "pglite" | "postgres";
  queue: () => { queue: JobQueue; drop(): Promise<void> };
}> = [
  ...STORE_KINDS.map((store) => ({
    name: `${store}, in-process queue`,
    store,
    queue: () => ({ queue: new InProcessQueue() as JobQueue, drop: async () => {} }),
  })),
  ...(TEST_REDIS_URL
    ? [
        {
          name: "pglite, BullMQ queue",
          store: "pglite" as const,
          queue: () => {
            const prefix = uniqueJobsPrefix();
            return { queue: bullQueue(prefix) as JobQueue, drop: () => dropJobKeys(prefix) };
          },
        },
      ]
    : []),
];

describe.each(SETUPS)("Conversation title (automatic, background job) on $name", (setup) => {
  let s: ChatStack;
  let held: HeldJobs;
  let drop: () => Promise<void>;
  let user: AppUserHandle;

  beforeAll(async () => {
    const made = setup.queue();
    drop = made.drop;
    held = new HeldJobs(made.queue);
    s = await startChatStack({ store: setup.store, jobQueue: held, language: "en" });
    user = await signedInUser(s.t);
  });
  afterAll(async () => {
    await s.close();
    await drop();
  });
  beforeEach(async () => {
    await held.release();
    await s.jobsIdle();
    await s.reset();
  });

  /** Lets the held title jobs run and waits for them. */
  async function runJobs(): Promise<void> {
    await held.release();
    await s.jobsIdle();
  }

  const titleRequests = () =>
    s.chatRequests().filter((request) => (request.body as { stream?: boolean }).stream !== true);

  async function firstExchange(content: string, create: Record<string, unknown> = {}) {
    const id = await newConversation(user, create);
    const { response, events } = await sendMessage(user, id, { content, model: CHAT_MODEL });
    return { id, response, done: events.at(-1) };
  }

  describe("a first message shorter than 12 characters becomes the title unchanged; from 12 on, the model writes it", () => {
    const cases: Array<[string, string]> = [
      ["Ciao!", "Ciao!"],
      ["Hello world", "Hello world"], // 11 characters
      ["Grüezi 🙂 mi", "Grüezi 🙂 mi"], // 11 characters (the emoji is one)
      ["Hello world!", echoOf("Hello world!")], // 12 characters: generated
    ];
    it.each(cases)("%j -> %j", async (content, title) => {
      const { id, done } = await firstExchange(content);
      expect(done).toMatchObject({ outcome: "ok", title_job_queued: true });
      expect((await readConversation(user, id)).title).toBe("New chat");
      await runJobs();
      expect((await readConversation(user, id)).title).toBe(title);
      expect(titleRequests()).toHaveLength(title === content ? 0 : 1);
    });
  });

  it("generated title: the first message's chat model is asked (installation zones, not streamed, a few tokens), billed to the account as app.chat.title", async () => {
    const content = "Tell me about the lakes of Ticino";
    const { id, response } = await firstExchange(content);
    await runJobs();
    const conversation = await readConversation(user, id);
    expect(conversation.title).toBe(echoOf(content));
    const [request] = titleRequests();
    expect(request?.machine).not.toBe("fb-outside");
    expect(request?.body).toMatchObject({
      model: CHAT_MODEL,
      max_tokens: 32,
      messages: [
        { role: "system", content: expect.stringContaining("at most 8 words") },
        { role: "user", content },
      ],
    });
    const requestId = `${response.headers.get("x-request-id")}_title`;
    const records = await eventually(
      async () => (await s.t.admin("GET", `/usage?account_id=${user.accountId}&limit=100`)).body.data,
      (list: Array<{ request_id: string }>) => list.some((r) => r.request_id === requestId),
    );
    expect(records.find((r: { request_id: string }) => r.request_id === requestId)).toMatchObject({
      endpoint: "app.chat.title",
      key_id: null,
      model: CHAT_MODEL,
      outcome: "ok",
    });
    // The automatic title does not reorder the list: updated_at is the last message's.
    expect(conversation.updated_at).toBe((await readConversation(user, id)).updated_at);
  });

  it("a generated title is at most 255 characters", async () => {
    const content = `Please${"x".repeat(300)}`;
    const { id } = await firstExchange(content);
    await runJobs();
    const { title } = await readConversation(user, id);
    expect(title).toBe(echoOf(content).slice(0, 255));
  });

  it("generation fails: the beginning of the first message is the title", async () => {
    const content =
      "Vorrei sapere quali sono i migliori sentieri escursionistici in Valle Maggia durante l'estate";
    const { id, done } = await firstExchange(content);
    expect(done?.title_job_queued).toBe(true);
    await s.alpha.setMode("error500");
    await s.beta.setMode("error500");
    await runJobs();
    expect(titleRequests().length).toBeGreaterThan(0);
    expect((await readConversation(user, id)).title).toBe("Vorrei sapere quali sono i migliori sentieri…");
  });

  it("Untrusted work: a title job its queue gave up (its runs stopped the service twice) ends as a failed generation does", async () => {
    const content =
      "Vorrei sapere quali sono i migliori sentieri escursionistici in Valle Maggia durante l'estate";
    const { id } = await firstExchange(content);
    const data: TitleJobData = {
      conversationId: id,
      accountId: user.accountId,
      model: CHAT_MODEL,
      backend: null,
      requestId: "req_given_up",
    };
    await held.hooks.get(TITLE_JOB)?.onGaveUp?.(data, 2);
    expect((await readConversation(user, id)).title).toBe("Vorrei sapere quali sono i migliori sentieri…");
    expect(titleRequests()).toHaveLength(0);
    held.forget();
  });

  it("a title given at creation is the user's: no job, never replaced", async () => {
    const { id, done } = await firstExchange("Tell me about the lakes of Ticino", { title: "Lakes" });
    expect(done).toMatchObject({ outcome: "ok", title_job_queued: false });
    await runJobs();
    expect((await readConversation(user, id)).title).toBe("Lakes");
    expect(titleRequests()).toHaveLength(0);
  });

  it("a rename before the first answer is the user's: no job", async () => {
    const id = await newConversation(user);
    await user.post(`/chat/sessions/${id}`, { title: "Renamed" }, "PATCH");
    const { events } = await sendMessage(user, id, { content: "Tell me about the lakes", model: CHAT_MODEL });
    expect(events.at(-1)?.title_job_queued).toBe(false);
    await runJobs();
    expect((await readConversation(user, id)).title).toBe("Renamed");
  });

  it("a rename while the job runs is kept: the automatic title is written only while the title is the default", async () => {
    const { id } = await firstExchange("Tell me about the lakes of Ticino");
    // The machines take their time: the job is waiting for the model when the user renames.
    await s.alpha.setMode("slow", { slowMs: 400 });
    await s.beta.setMode("slow", { slowMs: 400 });
    await held.release();
    await eventually(
      async () => titleRequests().length,
      (n) => n === 1,
    );
    const renamed = await user.post(`/chat/sessions/${id}`, { title: "My lakes" }, "PATCH");
    expect(renamed.status).toBe(200);
    await s.jobsIdle();
    expect((await readConversation(user, id)).title).toBe("My lakes");
  });

  it("title_job_queued: true only after the first exchange with a non-empty answer while the title is the default", async () => {
    const id = await newConversation(user);
    const send = async (content: string) =>
      (await sendMessage(user, id, { content, model: CHAT_MODEL })).events.at(-1);
    // A failed first exchange: no answer, no job.
    await s.alpha.setMode("refuse");
    await s.beta.setMode("refuse");
    expect(await send("first, failing")).toMatchObject({ outcome: "error", title_job_queued: false });
    await s.reset();
    // An empty answer: no job.
    for (const fake of [s.alpha, s.beta]) fake.configure({ chunks: 0 });
    expect(await send("second, empty answer")).toMatchObject({ outcome: "ok", title_job_queued: false });
    for (const fake of [s.alpha, s.beta]) fake.configure({ chunks: undefined });
    // The first exchange with an answer: queued.
    expect(await send("third, answered")).toMatchObject({ outcome: "ok", title_job_queued: true });
    // Later exchanges: not again (also while the job has not run yet).
    expect(await send("fourth")).toMatchObject({ outcome: "ok", title_job_queued: false });
    await runJobs();
    expect(await send("fifth")).toMatchObject({ outcome: "ok", title_job_queued: false });
    // The title is made from the conversation's first message.
    expect((await readConversation(user, id)).title).toBe(echoOf("first, failing"));
  });

  it("the job is idempotent: run again (a second instance taking it over), it changes nothing and bills nothing more", async () => {
    const { id, response } = await firstExchange("Tell me about the lakes of Ticino");
    await runJobs();
    const title = (await readConversation(user, id)).title;
    expect(title).toBe(echoOf("Tell me about the lakes of Ticino"));
    const data: TitleJobData = {
      conversationId: id,
      accountId: user.accountId,
      model: CHAT_MODEL,
      backend: null,
      requestId: response.headers.get("x-request-id") ?? "",
    };
    await s.t.app.services.jobs.add(TITLE_JOB, data);
    await runJobs();
    expect((await readConversation(user, id)).title).toBe(title);
    expect(titleRequests()).toHaveLength(1);
    // A conversation deleted before its job runs: the job does nothing.
    const gone = await firstExchange("Tell me about the lakes of Zurich");
    await user.fetch(`/chat/sessions/${gone.id}`, { method: "DELETE" });
    await runJobs();
    expect(titleRequests()).toHaveLength(1);
  });
});
