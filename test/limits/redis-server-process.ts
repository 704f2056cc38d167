import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { Redis } from "ioredis";

/** Whether `redis-server` can be started by the tests. */
export const HAS_REDIS_SERVER = spawnSync("redis-server", ["--version"]).status === 0;

/** A private redis-server child on a loopback port, with nothing saved to disk. */
export class RedisServerProcess {
  readonly port: number;
  private child: ChildProcess | undefined;

  constructor(port: number) {
    this.port = port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server and resolves once it answers PING. */
  async start(): Promise<void> {
    const child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    this.child = child;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      const probe = new Redis(this.url, {
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      });
      probe.on("error", () => {}); // refused while the server starts: the loop retries
      try {
        await probe.connect();
        if ((await probe.ping()) === "PONG") return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        probe.disconnect();
      }
    }
    throw new Error("redis-server did not answer within 10 s");
  }

  /** Kills the server (no shutdown handshake: as if the machine went away) and waits for its exit. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  /** A client to look inside the server. */
  client(): Redis {
    const client = new Redis(this.url, { maxRetriesPerRequest: 0 });
    client.on("error", () => {}); // the tests kill the server under it
    return client;
  }
}
