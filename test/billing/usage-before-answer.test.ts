import { inArray } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reservations, usageRecords } from "../../src/store/schema.ts";
import type { MemoryUsageJournal } from "../../src/store/usage-journal.ts";
import { CHAT_MODEL, type EngineStack, startEngineStack } from "../e2e/engine-stack.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";

// A crash right after an answer must not lose its usage record, so the record (or the
// settlement of the reservation) is written before the answer's last byte leaves. The check reads
// the database the moment each client holds its whole answer, with no wait in between. In embedded
// mode the record is durable once journaled: the check reads the journal too.
const REQUESTS = 24;

const CASES: Array<{ name: string; path: string; body: Record<string, unknown>; endpoint: string }> = [
  {
    name: "chat completion",
    path: "/v1/chat/completions",
    body: { model: CHAT_MODEL, messages: [{ role: "user", content: "Hi" }] },
    endpoint: "chat.completions",
  },
  {
    name: "chat completion stream ([DONE] received)",
    path: "/v1/chat/completions",
    body: { model: CHAT_MODEL, messages: [{ role: "user", content: "Hi" }], stream: true },
    endpoint: "chat.completions",
  },
  {
    name: "completion stream",
    path: "/v1/completions",
    body: { model: CHAT_MODEL, prompt: "Say hi", stream: true },
    endpoint: "completions",
  },
  {
    name: "responses",
    path: "/v1/responses",
    body: { model: CHAT_MODEL, input: "Hi" },
    endpoint: "responses",
  },
  {
    name: "embeddings",
    path: "/v1/embeddings",
    body: { model: "bge-m3", input: ["one", "two"] },
    endpoint: "embeddings",
  },
];

describe.each(STORE_KINDS)("Usage is written before the answer ends (%s; crash-proof usage)", (store) => {
  let stack: EngineStack;
  beforeAll(async () => {
    stack = await startEngineStack({ store });
  });
  afterAll(() => stack?.close());

  const held = async (requestIds: string[]) =>
    stack.t.store.db
      .select({ requestId: reservations.requestId })
      .from(reservations)
      .where(inArray(reservations.requestId, requestIds));

  for (const keyKind of ["no monthly limit (group commit)", "a monthly limit (reservation settled)"]) {
    for (const c of CASES) {
      it(`${c.name}, key with ${keyKind}: each of ${REQUESTS} parallel answers has its record when its client has read it all`, async () => {
        const { key } = await stack.t.newKey(
          keyKind.startsWith("a monthly") ? { key: { monthly_limit: 100 } } : {},
        );
        const missing: string[] = [];
        const journal = stack.t.store.usageJournal as MemoryUsageJournal | undefined;
        const ids = await Promise.all(
          Array.from({ length: REQUESTS }, async () => {
            const response = await stack.t.fetch(c.path, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body: JSON.stringify(c.body),
            });
            const text = await response.text();
            expect(response.status, text).toBe(200);
            if (c.body.stream) expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
            const requestId = response.headers.get("x-request-id") as string;
            // Embedded mode journals the record (durable there) and writes it to the database after.
            const journaled = journal?.held.filter((row) => row.requestId === requestId) ?? [];
            const rows = [
              ...journaled,
              ...(await stack.t.store.db
                .select({ outcome: usageRecords.outcome, endpoint: usageRecords.endpoint })
                .from(usageRecords)
                .where(inArray(usageRecords.requestId, [requestId]))),
            ];
            if (
              rows.length === 0 ||
              rows.some((row) => row.outcome !== "ok" || row.endpoint !== c.endpoint)
            ) {
              missing.push(requestId);
            }
            return requestId;
          }),
        );
        expect(missing).toEqual([]);
        expect(await held(ids)).toEqual([]);
      });
    }
  }
});
