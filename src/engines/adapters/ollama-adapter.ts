import { parseNdjson } from "../http/ndjson.ts";
import type { UpstreamClient } from "../http/upstream-client.ts";
import { rootPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { upstreamModel } from "../served-models.ts";
import {
  fromOllamaChat,
  fromOllamaChatStream,
  fromOllamaEmbed,
  fromOllamaGenerate,
  fromOllamaGenerateStream,
  ollamaChatRequest,
  ollamaEmbedRequest,
  ollamaGenerateRequest,
} from "./ollama-transforms.ts";

const NDJSON = "application/x-ndjson";

/**
 * The adapter for Ollama's native API (no rerank: Ollama has none): requests carry the machine's
 * name for the model (`gemma3:27b`), answers the catalogue id.
 */
export function createOllamaAdapter(client: UpstreamClient): ProtocolAdapter<"ollama"> {
  return {
    chat: {
      async chat(machine, call, signal) {
        const path = rootPath(machine, "/api/chat");
        const body = ollamaChatRequest(call, false, upstreamModel(machine, call.model));
        return fromOllamaChat(await client.json({ machine, path, body, signal }), call);
      },

      async chatStream(machine, call, signal) {
        const path = rootPath(machine, "/api/chat");
        const body = ollamaChatRequest(call, true, upstreamModel(machine, call.model));
        const lines = await client.events({ machine, path, body, signal }, NDJSON, parseNdjson);
        return fromOllamaChatStream(lines, call);
      },
    },

    completion: {
      async complete(machine, call, signal) {
        const path = rootPath(machine, "/api/generate");
        const body = ollamaGenerateRequest(call, false, upstreamModel(machine, call.model));
        return fromOllamaGenerate(await client.json({ machine, path, body, signal }), call);
      },

      async completeStream(machine, call, signal) {
        const path = rootPath(machine, "/api/generate");
        const body = ollamaGenerateRequest(call, true, upstreamModel(machine, call.model));
        const lines = await client.events({ machine, path, body, signal }, NDJSON, parseNdjson);
        return fromOllamaGenerateStream(lines, call);
      },
    },

    embeddings: {
      async embed(machine, model, texts, signal) {
        const path = rootPath(machine, "/api/embed");
        const body = ollamaEmbedRequest(upstreamModel(machine, model), texts);
        return fromOllamaEmbed(await client.json({ machine, path, body, signal }), texts.length);
      },
    },
  };
}
