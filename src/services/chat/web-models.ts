import { TIER_NAMES } from "../../config/schema.ts";
import { listedModels } from "../../engines/catalogue.ts";
import type { Services } from "../services.ts";

/** One chat model as the web chat's picker offers it. */
export interface WebModel {
  id: string;
  vision: boolean;
  /** False when it cannot answer now (the picker shows it disabled). */
  available: boolean;
  /** The machines that serve it, up or not. */
  machines: number;
}

/**
 * The chat models a signed-in user may pick in the web chat, with the tiers (`GET /web/models`). A
 * model is unavailable when no machine serves it, none of its machines is up now, or it is served
 * on request and answers 503 until the operator activates it. Read per call: a reload replaces the
 * configuration and the machines.
 */
export async function webChatModels(services: Pick<Services, "config" | "engines" | "activations">) {
  const { config, engines } = services;
  const active = await services.activations.active();
  const data: WebModel[] = listedModels(config)
    .filter((model) => model.kind === "chat")
    .map((model) => ({
      id: model.id,
      vision: model.vision ?? false,
      available: engines.servingUp(model.id).length > 0 && (!model.on_request || active.has(model.id)),
      machines: engines.serving(model.id).length,
    }));
  return { data, default_model: config.app.default_chat_label, tiers: TIER_NAMES, default_tier: "slow" };
}
