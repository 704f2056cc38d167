import { TIER_NAMES } from "../../config/schema.ts";
import type { WebModel, WebModels } from "../../contract/app-api.ts";
import { listedModels } from "../../engines/catalogue.ts";
import type { Services } from "../services.ts";

/**
 * The chat models a signed-in user may pick in the web chat, with the tiers (`GET /web/models`). A
 * model is unavailable when no machine that can chat serves it, none of its machines is up now, or
 * it is served on request and answers 503 until the operator activates it. Read per call: a reload
 * replaces the configuration and the machines.
 */
export async function webChatModels(
  services: Pick<Services, "config" | "engines" | "activations">,
): Promise<WebModels> {
  const { config, engines } = services;
  const active = await services.activations.active();
  const data: WebModel[] = listedModels(config)
    .filter((model) => model.kind === "chat")
    .map((model) => ({
      id: model.id,
      vision: model.vision ?? false,
      available:
        engines.servingUp(model.id, "chat").length > 0 && (!model.on_request || active.has(model.id)),
      machines: engines.able(model.id, "chat").length,
    }));
  return { data, default_model: config.app.default_chat_label, tiers: TIER_NAMES, default_tier: "slow" };
}
