import { buildApp } from "./app.ts";
import { ConfigError, loadConfig } from "./config/load.ts";
import type { Config } from "./config/schema.ts";
import { DataDirBusyError } from "./store/data-dir-lock.ts";
import { openStore } from "./store/open-store.ts";

/** Starts the server: config -> store -> app -> listen, and stops it gracefully on SIGTERM or SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const store = await openStore(
    config.server.database_url
      ? { databaseUrl: config.server.database_url }
      : { dataDir: config.server.data_dir },
  );
  const app = await buildApp({ config, store });
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
      await store.close();
      app.log.info("stopped");
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, "failure while stopping");
      process.exit(1);
    }
  };
  process.once("SIGTERM", () => void stop("SIGTERM"));
  process.once("SIGINT", () => void stop("SIGINT"));

  await app.listen({ port: config.server.port, host: config.server.host });
  const url = localUrl(config, app.server.address());
  store.announce(url);
  app.services.billing.startSweeper();
  app.services.health.start();
  app.log.info({ url, database: store.kind }, "zona listening");
}

function localUrl(config: Config, address: ReturnType<import("node:http").Server["address"]>): string {
  const port = typeof address === "object" && address ? address.port : config.server.port;
  const host = ["0.0.0.0", "::", "localhost"].includes(config.server.host) ? "127.0.0.1" : config.server.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirBusyError) {
    process.stderr.write(`zona: ${error.message}\n`);
  } else {
    process.stderr.write(
      `zona: could not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
