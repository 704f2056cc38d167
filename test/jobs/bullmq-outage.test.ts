import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { BullMqQueue } from "../../src/jobs/bullmq-queue.ts";
import { freePort } from "../helpers/free-port.ts";
import { HAS_REDIS_SERVER, RedisServerProcess } from "../limits/redis-server-process.ts";
import { uniqueJobsPrefix } from "./job-fixtures.ts";

const WARNING = "job queue: Redis unreachable or failing; background jobs wait for it";
const BACK = "job queue: Redis is reachable again";
const LEFT_OPEN = "job queue: closed without Redis; connections left to the process's exit";
const WARN_WINDOW_MS = 10_000;

/** A logger whose lines the test reads back. */
function capturedLog() {
  const entries: Array<{ msg: string; time: number; level: number }> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) entries.push(JSON.parse(line));
      done();
    },
  });
  return {
    log: pino({ level: "info" }, sink),
    entries,
    count: (msg: string) => entries.filter((e) => e.msg === msg).length,
  };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await pause(50);
}

describe.skipIf(!HAS_REDIS_SERVER)("the BullMQ job queue when Redis is unreachable", () => {
  const servers: RedisServerProcess[] = [];
  const queues: BullMqQueue[] = [];
  afterEach(async () => {
    await Promise.all(queues.splice(0).map((queue) => queue.close()));
    await Promise.all(servers.splice(0).map((server) => server.kill()));
  });

  async function startServer(): Promise<RedisServerProcess> {
    const server = new RedisServerProcess(await freePort());
    servers.push(server);
    await server.start();
    return server;
  }
  function queueOn(url: string, log: ReturnType<typeof capturedLog>["log"]): BullMqQueue {
    const queue = new BullMqQueue({ url, prefix: uniqueJobsPrefix(), backoffMs: 10, log });
    queues.push(queue);
    return queue;
  }

  it("warns at most once per 10 s however many errors the reconnection attempts raise, and runs jobs again once Redis is back", async () => {
    const server = await startServer();
    const captured = capturedLog();
    const queue = queueOn(server.url, captured.log);
    let runs = 0;
    queue.work("count", async () => {
      runs += 1;
    });
    await queue.add("count", {});
    await queue.idle();
    expect(runs).toBe(1);

    const downAt = Date.now();
    await server.kill();
    await until(() => captured.count(WARNING) > 0);
    // Several reconnection attempts of three connections (queue, worker, its blocking one) fail meanwhile.
    await pause(3_000);
    const warnings = captured.count(WARNING);
    expect(warnings).toBeGreaterThanOrEqual(1);
    expect(warnings).toBeLessThanOrEqual(Math.floor((Date.now() - downAt) / WARN_WINDOW_MS) + 1);

    await server.start();
    await queue.add("count", {});
    await queue.idle();
    expect(runs).toBe(2);
    await until(() => captured.count(BACK) > 0);
  });

  it("close() does not wait for a Redis that went away: it waits for the running handler (signal aborted) only", async () => {
    const server = await startServer();
    const captured = capturedLog();
    const queue = queueOn(server.url, captured.log);
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const handler = { aborted: false, ended: false };
    queue.work("long", async (_data, signal) => {
      started();
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      handler.aborted = signal.aborted;
      handler.ended = true;
    });
    await queue.add("long", {});
    await running;
    await server.kill();
    await until(() => captured.count(WARNING) > 0);

    await queue.close();
    expect(handler).toEqual({ aborted: true, ended: true });
    // Nothing was left waiting on Redis: the connections were cut, not abandoned.
    expect(captured.count(LEFT_OPEN)).toBe(0);
    expect(captured.count(WARNING)).toBe(1);
  });

  it("a queue whose Redis never answered: one warning, and close() resolves", async () => {
    const captured = capturedLog();
    // A free port nobody listens on: every connection attempt is refused.
    const queue = queueOn(`redis://127.0.0.1:${await freePort()}`, captured.log);
    queue.work("never", async () => {});
    await until(() => captured.count(WARNING) > 0);
    await pause(2_000);
    await queue.close();
    expect(captured.count(WARNING)).toBe(1);
    expect(captured.count(LEFT_OPEN)).toBe(0);
  });
});
