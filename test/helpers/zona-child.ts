import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("../..", import.meta.url).pathname;

/** Where a Zona child keeps its data: an embedded data folder, or PostgreSQL and Redis. */
export type ChildStorage = { dataDir: string } | { databaseUrl: string; redisUrl: string };

/** How every start of one Zona child looks: the same port, config and storage each time. */
export interface ZonaChildSpec {
  port: number;
  configFile: string;
  adminToken: string;
  storage: ChildStorage;
}

/** A real `node src/main.ts` process, started again on the same port after it is killed. */
export class ZonaChild {
  readonly url: string;
  private readonly spec: ZonaChildSpec;
  private child: ChildProcess | undefined;
  /** What the process printed (warnings and errors: the child logs at `warn`). */
  output = "";
  /**
   * The process's temporary folder (TMPDIR): uploads and documents being read. A process that is
   * killed leaves its files there; they are removed whenever it has ended.
   */
  private readonly tmp = mkdtempSync(join(tmpdir(), "zona-child-tmp-"));

  constructor(spec: ZonaChildSpec) {
    this.spec = spec;
    this.url = `http://127.0.0.1:${spec.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process and resolves once `/healthz` answers 200 (within `timeoutMs`). */
  async start(timeoutMs = 60_000): Promise<void> {
    const storage: Record<string, string> =
      "dataDir" in this.spec.storage
        ? { ZONA_DATA_DIR: this.spec.storage.dataDir }
        : { DATABASE_URL: this.spec.storage.databaseUrl, REDIS_URL: this.spec.storage.redisUrl };
    mkdirSync(this.tmp, { recursive: true });
    const child = spawn(process.execPath, ["src/main.ts"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        TMPDIR: this.tmp,
        PORT: String(this.spec.port),
        HOST: "127.0.0.1",
        ZONA_ADMIN_TOKEN: this.spec.adminToken,
        ZONA_CONFIG: this.spec.configFile,
        ZONA_LOG_LEVEL: "warn",
        ...storage,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-200_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    for (const deadline = Date.now() + timeoutMs; ; ) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `zona exited while starting (${child.exitCode ?? child.signalCode}):\n${this.output}`,
        );
      }
      try {
        const response = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2_000) });
        await response.arrayBuffer();
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(`zona did not start within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** `kill -9`: no shutdown of any kind, as when the machine or the container dies. */
  async kill9(): Promise<void> {
    await this.end("SIGKILL");
  }

  /** A graceful stop (SIGTERM): requests in flight finish, usage is written, the store is closed. */
  async stop(): Promise<void> {
    await this.end("SIGTERM");
  }

  private async end(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill(signal);
      await exited;
    }
    rmSync(this.tmp, { recursive: true, force: true });
  }
}
