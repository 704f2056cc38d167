import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config/schema.ts";

/**
 * At start and after every reload: one warning when no chat model of the configuration has a
 * machine that serves it, so the operator of a fresh installation learns at once why the web chat
 * offers no model (its users are told to ask the operator) and where to look. True when it warned.
 */
export function warnWithoutChatModel(config: Config, log: Pick<FastifyBaseLogger, "warn">): boolean {
  const served = new Set(config.machines.flatMap((machine) => machine.models));
  if (config.models.some((model) => model.kind === "chat" && served.has(model.id))) return false;
  log.warn(
    "no chat model is set up: the web chat has none to offer and chat requests find no model; " +
      "declare a chat model and a machine that serves it (docs/engines.md)",
  );
  return true;
}
