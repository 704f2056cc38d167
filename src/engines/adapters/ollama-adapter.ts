import { parseNdjson } from "../http/ndjson.ts";
import type { UpstreamClient } from "../http/upstream-client.ts";
import { rootPath } from "../http/upstream-target.ts";
import type { EngineAdapter } from "../types.ts";
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

/** The adapter for Ollama's native API (no rerank: Ollama has none). */
export function createOllamaAdapter(client: UpstreamClient): EngineAdapter {
  return {
    async chat(machine, call, signal) {
      const path = rootPath(machine, "/api/chat");
      const raw = await client.json({ machine, path, body: ollamaChatRequest(call, false), signal });
      return fromOllamaChat(raw, call);
    },

    async chatStream(machine, call, signal) {
      const path = rootPath(machine, "/api/chat");
      const body = await client.stream(
        { machine, path, body: ollamaChatRequest(call, true), signal },
        NDJSON,
      );
      return fromOllamaChatStream(parseNdjson(body), call);
    },

    async complete(machine, call, signal) {
      const path = rootPath(machine, "/api/generate");
      const raw = await client.json({ machine, path, body: ollamaGenerateRequest(call, false), signal });
      return fromOllamaGenerate(raw, call);
    },

    async completeStream(machine, call, signal) {
      const path = rootPath(machine, "/api/generate");
      const body = await client.stream(
        { machine, path, body: ollamaGenerateRequest(call, true), signal },
        NDJSON,
      );
      return fromOllamaGenerateStream(parseNdjson(body), call);
    },

    async embed(machine, model, texts, signal) {
      const path = rootPath(machine, "/api/embed");
      const raw = await client.json({ machine, path, body: ollamaEmbedRequest(model, texts), signal });
      return fromOllamaEmbed(raw, texts.length);
    },
  };
}
