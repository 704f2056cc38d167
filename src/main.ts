// First: an unsuitable Node.js stops here, before the other modules load.
import "./require-node.ts";
import { createServer } from "node:net";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.ts";
import { ConfigError, loadConfig } from "./config/load.ts";
import { listenerUrl } from "./config/public-url.ts";
import type { Config } from "./config/schema.ts";
import { DataDirBusyError } from "./store/data-dir-lock.ts";
import {
  issueLocalOperatorCredential,
  type LocalOperatorCredential,
} from "./store/local-operator-credential.ts";
import { DatabaseUnreachableError, openStore } from "./store/open-store.ts";

/** A start that cannot go on, told in one line (no stack trace: nothing in Zona is broken). */
class StartFailure extends Error {
  override name = "StartFailure";
}

// An unexpected failure at start is a bug: its stack is shown when the operator asks for details.
let showStacks = false;

/** Starts the server: config -> store -> app -> listen, and stops it gracefully on SIGTERM or SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  showStacks = config.server.log_level === "debug" || config.server.log_level === "trace";
  // Before any data is made: a start that cannot listen leaves no new database behind.
  await checkCanListen(config.server.host, config.server.port);
  const store = await openStore(
    config.server.database_url
      ? { databaseUrl: config.server.database_url }
      : { dataDir: config.server.data_dir },
  );
  // The `zona` command on this machine reaches the operator API with it (docs/admin-api.md); with
  // PostgreSQL the command opens the database itself.
  let credential: LocalOperatorCredential | undefined;
  const closeStore = async () => {
    credential?.remove();
    await store.close();
  };
  let app: FastifyInstance;
  try {
    if (!config.server.database_url) credential = issueLocalOperatorCredential(config.server.data_dir);
    app = await buildApp({ config, store, ...(credential ? { localOperatorToken: credential.token } : {}) });
  } catch (error) {
    await closeWithin(closeStore());
    throw error;
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "stopping: no new connections, finishing requests in flight");
    const deadline = setTimeout(() => {
      app.log.error("requests still running after the grace period; exiting");
      process.exit(1);
    }, config.server.shutdown_grace_seconds * 1000);
    deadline.unref();
    try {
      await app.close();
      await closeStore();
      app.log.info("stopped");
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, "failure while stopping");
      process.exit(1);
    }
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));

  await listen(app, closeStore, config);
  const url = localUrl(config, app.server.address());
  store.announce(url);
  app.services.billing.startSweeper();
  app.reloader.startBackground();
  // SIGHUP re-reads the configuration: machines, models, prices and limits for new requests.
  process.on("SIGHUP", () => void app.reloader.reload("SIGHUP"));
  app.log.info({ url, database: store.kind }, "zona listening");
}

/** Listens; a port that cannot be taken closes what was opened (the data folder is released) and says why. */
async function listen(app: FastifyInstance, closeStore: () => Promise<void>, config: Config): Promise<void> {
  const { port, host } = config.server;
  try {
    await app.listen({ port, host });
  } catch (error) {
    await closeWithin(app.close());
    await closeWithin(closeStore());
    throw listenFailure(error, host, port);
  }
}

/**
 * Takes the port for a moment and gives it back: a port in use (or an address not of this machine)
 * stops the start before the data folder or the database is touched. A port taken in between is
 * still caught by `listen`.
 */
async function checkCanListen(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once("error", reject);
      probe.listen({ host, port, exclusive: true }, resolve);
    });
  } catch (error) {
    throw listenFailure(error, host, port);
  } finally {
    await new Promise<void>((resolve) => (probe.listening ? probe.close(() => resolve()) : resolve()));
  }
}

/** The operator's line for a port or address that cannot be listened on; other errors as they are. */
function listenFailure(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") {
    return new StartFailure(`port ${port} on ${host} is already in use: stop what holds it or set PORT`);
  }
  if (code === "EACCES") {
    return new StartFailure(
      `not allowed to listen on port ${port} on ${host} (EACCES): use a port above 1023`,
    );
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND" || code === "EAI_AGAIN") {
    return new StartFailure(`cannot listen on ${host}: not an address of this machine (${code}); set HOST`);
  }
  return error;
}

// A failed start must not hang on closing what it opened (a Redis that is away, say).
const CLOSE_WAIT_MS = 5_000;

async function closeWithin(closing: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, CLOSE_WAIT_MS);
  });
  await Promise.race([closing.catch(() => {}), late]);
  clearTimeout(timer);
}

/** Where the `zona` command on this machine reaches the server (recorded beside the data folder). */
function localUrl(config: Config, address: ReturnType<import("node:http").Server["address"]>): string {
  if (typeof address === "object" && address !== null) return listenerUrl(address, "127.0.0.1");
  return `http://127.0.0.1:${config.server.port}`;
}

main().catch((error: unknown) => {
  process.stderr.write(`zona: ${startFailureText(error)}\n`);
  process.exit(1);
});

/** What the operator reads when the start fails: the known causes as they are, anything else in one line. */
function startFailureText(error: unknown): string {
  if (
    error instanceof ConfigError ||
    error instanceof DataDirBusyError ||
    error instanceof DatabaseUnreachableError ||
    error instanceof StartFailure
  ) {
    return error.message;
  }
  if (showStacks && error instanceof Error && error.stack) return `could not start: ${error.stack}`;
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const firstLine = message.split("\n", 1)[0] ?? "";
  return `could not start: ${firstLine}${typeof code === "string" && !message.includes(code) ? ` (${code})` : ""}`;
}
