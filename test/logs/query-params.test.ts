import { Writable } from "node:stream";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loggerOptions } from "../../src/http/logger.ts";
import type { Store } from "../../src/store/database.ts";
import { openStore } from "../../src/store/open-store.ts";

const PROMPT = "a user's private words about their health";

describe("Logs: a failed query is logged without its parameters (never a user's text, a token's hash or an address)", () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ memory: true });
  });
  afterAll(() => store?.close());

  it("the message, the stack and Drizzle's own `params` leave the values out and keep the statement and its cause", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = pino(loggerOptions("info"), sink);
    const failure = await store.db.execute(sql`select * from no_such_table where content = ${PROMPT}`).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(String((failure as Error).message)).toContain(PROMPT); // what would leak without the serializer
    log.error({ err: failure }, "unexpected failure");
    const written = lines.join("");
    expect(written).not.toContain(PROMPT);
    const { err } = JSON.parse(written) as { err: Record<string, string> };
    expect(err.message).toContain("select * from no_such_table where content = $1");
    expect(err.params).toBe("[not logged]");
    expect(err.stack).toContain('relation "no_such_table" does not exist');
  });
});
