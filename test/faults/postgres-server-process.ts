import { execFile, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

// Debian's server binaries; the first version found.
const BIN = (() => {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const version = readdirSync(root).find((v) => existsSync(join(root, v, "bin", "initdb")));
  return version ? join(root, version, "bin") : undefined;
})();
const AS_ROOT = process.getuid?.() === 0;
const POSTGRES_USER = AS_ROOT ? spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }) : undefined;

/** Whether a private PostgreSQL server can be started here (its binaries, and a user to run them as root). */
export const HAS_POSTGRES_SERVER = BIN !== undefined && (!AS_ROOT || POSTGRES_USER?.status === 0);

/**
 * A PostgreSQL server of the test's own, in a temporary folder on a loopback port, so that it can be
 * crashed and started again without touching the machine's server. PostgreSQL refuses to run as
 * root: as root it runs as the `postgres` user.
 */
export class PostgresServerProcess {
  readonly port: number;
  private readonly dir: string;

  constructor(port: number) {
    this.port = port;
    this.dir = mkdtempSync(join(tmpdir(), "zona-pg-"));
    if (AS_ROOT)
      chownSync(this.dir, Number(POSTGRES_USER?.stdout.trim()), Number(POSTGRES_USER?.stdout.trim()));
  }

  /** A connection URL to its `postgres` database. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Creates the cluster (once) and starts the server; resolves when it accepts connections. */
  async start(): Promise<void> {
    if (!existsSync(join(this.dir, "data"))) {
      await this.run("initdb", ["-D", join(this.dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"]);
    }
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
    await this.run("pg_ctl", [
      "-D",
      join(this.dir, "data"),
      "-o",
      options,
      "-l",
      join(this.dir, "log"),
      "-w",
      "-t",
      "30",
      "start",
    ]);
  }

  /** Stops the server as a crash does (`immediate`: every backend killed, recovery at the next start). */
  async crash(): Promise<void> {
    await this.run("pg_ctl", ["-D", join(this.dir, "data"), "-m", "immediate", "-w", "stop"]);
  }

  /** Stops the server if it runs and removes its folder. */
  async remove(): Promise<void> {
    try {
      await this.run("pg_ctl", ["-D", join(this.dir, "data"), "-m", "immediate", "-w", "stop"]);
    } catch {
      // not running
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async run(command: string, args: string[]): Promise<void> {
    const binary = join(BIN as string, command);
    if (AS_ROOT) await run("runuser", ["-u", "postgres", "--", binary, ...args]);
    else await run(binary, args);
  }
}
