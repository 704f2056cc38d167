import type { UpstreamClient } from "../http/upstream-client.ts";
import { openAiPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { fromModeration, imageModerationInput, moderationRequest } from "./moderation-transforms.ts";

/** The adapter for OpenAI-style moderation servers (`POST /v1/moderations`): texts, and pictures as multi-modal input. */
export function createModerationAdapter(client: UpstreamClient): ProtocolAdapter<"moderation"> {
  return {
    moderation: {
      async moderate(machine, input, signal) {
        const path = openAiPath(machine, "/moderations");
        const raw = await client.json({ machine, path, body: moderationRequest(machine, input), signal });
        return fromModeration(raw);
      },
    },

    imageModeration: {
      async moderateImage(machine, png, signal) {
        const path = openAiPath(machine, "/moderations");
        const body = moderationRequest(machine, imageModerationInput(png));
        const raw = await client.json({ machine, path, body, signal });
        return fromModeration(raw);
      },
    },
  };
}
