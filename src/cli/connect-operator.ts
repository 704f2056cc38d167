import { resolve } from "node:path";
import { openSharedMoney } from "../billing/shared/open-shared-money.ts";
import { redisKeyPrefixes } from "../config/redis-keys.ts";
import type { Config } from "../config/schema.ts";
import { operatorApi } from "../routes/admin/operator-api.ts";
import { createServices } from "../services/create-services.ts";
import { DataDirBusyError, type DataDirOwner, readDataDirOwner } from "../store/data-dir-lock.ts";
import { localCredentialPath, readLocalOperatorCredential } from "../store/local-operator-credential.ts";
import { openStore } from "../store/open-store.ts";
import { CliFailure, UsageError } from "./cli-errors.ts";
import { httpOperatorClient } from "./http-operator-client.ts";
import type { OperatorConnection } from "./operator-client.ts";

/** What decides how the command reaches the operator actions. */
export interface ConnectOptions {
  config: Config;
  /** `--url`, else ZONA_URL. */
  url?: string;
  /** Where relative data folders are resolved. */
  cwd: string;
}

/**
 * Picks the way to the operator actions:
 * an explicit URL -> its operator API; a live server holding the embedded database -> its
 * operator API (PGlite admits one process), with ZONA_ADMIN_TOKEN or else the credential the server
 * wrote into the data folder; PostgreSQL -> the database directly (it admits many); otherwise the
 * embedded database directly.
 */
export async function connectOperator(options: ConnectOptions): Promise<OperatorConnection> {
  const { config } = options;
  const token = config.server.admin_token;
  if (options.url !== undefined) {
    const url = checkedUrl(options.url);
    if (!token) {
      throw new CliFailure(
        `no admin token to call the operator API at ${url}; set ZONA_ADMIN_TOKEN to the server's token`,
      );
    }
    return http(url, token);
  }
  const databaseUrl = config.server.database_url;
  if (databaseUrl) return direct(config, { databaseUrl });

  const dataDir = resolve(options.cwd, config.server.data_dir);
  const owner = readDataDirOwner(dataDir);
  if (owner) {
    const url = ownerUrl(owner, config);
    if (token) return http(url, token);
    return http(url, localCredential(dataDir, owner), localCredentialPath(dataDir));
  }
  try {
    return await direct(config, { dataDir });
  } catch (error) {
    if (error instanceof DataDirBusyError) throw busy(config.server.data_dir, error.owner);
    throw error;
  }
}

function http(url: string, token: string, credentialFile?: string): OperatorConnection {
  return { client: httpOperatorClient(url, token, credentialFile), mode: "http", close: async () => {} };
}

/** The credential the running server wrote into its data folder, or why there is none to use. */
function localCredential(dataDir: string, owner: DataDirOwner): string {
  const path = localCredentialPath(dataDir);
  let credential: string | undefined;
  try {
    credential = readLocalOperatorCredential(dataDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new CliFailure(
      `cannot read ${path} (${code}), the operator credential of the running Zona server (pid ${owner.pid}): ` +
        "run zona as the user that runs the server, or set ZONA_ADMIN_TOKEN for both",
    );
  }
  if (credential !== undefined) return credential;
  throw new CliFailure(
    `the running Zona server (pid ${owner.pid}${owner.url ? `, ${owner.url}` : ""}) holding ${dataDir} ` +
      `wrote no operator credential (${path}): a server still starting writes it in a moment, ` +
      "an older version never does (set ZONA_ADMIN_TOKEN for both the server and this command)",
  );
}

async function direct(
  config: Config,
  where: { databaseUrl: string } | { dataDir: string },
): Promise<OperatorConnection> {
  const store = await openStore(where);
  // With Redis, the money of the running instances is decided there: a change of credits is too.
  const redisUrl = config.server.redis_url;
  const money =
    "databaseUrl" in where && redisUrl
      ? await openSharedMoney({ url: redisUrl, prefix: redisKeyPrefixes(config).money }, store)
      : undefined;
  const services = createServices(
    config,
    store,
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
    money,
  );
  return {
    client: operatorApi(services.operator),
    mode: "direct",
    close: async () => {
      await money?.stop();
      await store.close();
    },
  };
}

/** The URL a server recorded in its lock; a server still starting has none yet, so the configured port is the guess. */
function ownerUrl(owner: DataDirOwner, config: Config): string {
  if (owner.url) return owner.url;
  if (config.server.port === 0) {
    throw new CliFailure(
      `the Zona server (pid ${owner.pid}) holding ${config.server.data_dir} has not recorded its URL yet; ` +
        "try again in a moment or pass --url",
    );
  }
  return `http://127.0.0.1:${config.server.port}`;
}

function busy(dataDir: string, owner: DataDirOwner): CliFailure {
  const holder = owner.url
    ? `the running Zona server (pid ${owner.pid}, ${owner.url})`
    : `another Zona process (pid ${owner.pid})`;
  // Taken between the look at the lock and the opening: next time the command finds the holder.
  return new CliFailure(`the embedded database in ${dataDir} is in use by ${holder}; try again in a moment`);
}

function checkedUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--url / ZONA_URL must be an http(s) URL, got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`--url / ZONA_URL must be an http(s) URL, got "${value}"`);
  }
  return value;
}
