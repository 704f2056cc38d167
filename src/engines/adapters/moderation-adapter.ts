import type { UpstreamClient } from "../http/upstream-client.ts";
import { openAiPath } from "../http/upstream-target.ts";
import type { EngineAdapter } from "../types.ts";
import { fromModeration, moderationRequest } from "./moderation-transforms.ts";

/** The adapter for OpenAI-style moderation servers (`POST /v1/moderations`). */
export function createModerationAdapter(client: UpstreamClient): EngineAdapter {
  return {
    async moderate(machine, input, signal) {
      const path = openAiPath(machine, "/moderations");
      const raw = await client.json({ machine, path, body: moderationRequest(machine, input), signal });
      return fromModeration(raw);
    },
  };
}
