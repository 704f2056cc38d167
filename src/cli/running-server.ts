import { resolve } from "node:path";
import { cliEnvironment, loadConfig } from "../config/load.ts";
import { readDataDirOwner } from "../store/data-dir-lock.ts";
import { CliFailure } from "./cli-errors.ts";
import { type CommandInput, stringValue } from "./command.ts";
import type { OperatorClient } from "./operator-client.ts";

/**
 * What only a running server can do (machine health, reloading its configuration), from its
 * operator client; a clear failure when the command would open a database instead.
 */
export async function fromRunningServer<K extends "listMachines" | "reload">(
  input: CommandInput,
  action: K,
  what: string,
): Promise<NonNullable<OperatorClient[K]>> {
  const failure = new CliFailure(
    `${what}: this needs the running Zona server, and none was found: pass --url (or set ZONA_URL) ` +
      "with ZONA_ADMIN_TOKEN, or run this next to a server that holds the embedded database",
  );
  if (!serverKnown(input)) throw failure;
  const call = (await input.operator())[action];
  if (!call) throw failure;
  return call as NonNullable<OperatorClient[K]>;
}

/**
 * Whether the command will reach a server rather than open a database: an explicit URL, or a live
 * server recorded in the embedded data folder. With PostgreSQL the command would go to the
 * database, so a URL is needed.
 */
function serverKnown(input: CommandInput): boolean {
  if (stringValue(input.values, "url") !== undefined || cliEnvironment(input.io.env).url !== undefined)
    return true;
  const config = loadConfig(input.io.env, input.io.cwd);
  if (config.server.database_url) return false;
  return readDataDirOwner(resolve(input.io.cwd, config.server.data_dir)) !== undefined;
}
