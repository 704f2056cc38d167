import { parseSseJson } from "../http/sse.ts";
import type { UpstreamClient } from "../http/upstream-client.ts";
import { openAiPath } from "../http/upstream-target.ts";
import type { EngineAdapter } from "../types.ts";
import {
  chatRequest,
  completionRequest,
  embeddingsRequest,
  fromEmbeddings,
  fromRerank,
  rerankRequest,
  toChatChunks,
  toChatCompletion,
  toTextChunks,
  toTextCompletion,
} from "./openai-transforms.ts";

const SSE = "text/event-stream";

/** The adapter for OpenAI-compatible servers (vLLM, SGLang, llama.cpp server, TGI). */
export function createOpenAiAdapter(client: UpstreamClient): EngineAdapter {
  return {
    async chat(machine, call, signal) {
      const path = openAiPath(machine, "/chat/completions");
      const raw = await client.json({ machine, path, body: chatRequest(call, false), signal });
      return toChatCompletion(raw, call);
    },

    async chatStream(machine, call, signal) {
      const path = openAiPath(machine, "/chat/completions");
      const body = await client.stream({ machine, path, body: chatRequest(call, true), signal }, SSE);
      return toChatChunks(parseSseJson(body), call);
    },

    async complete(machine, call, signal) {
      const path = openAiPath(machine, "/completions");
      const raw = await client.json({ machine, path, body: completionRequest(call, false), signal });
      return toTextCompletion(raw, call);
    },

    async completeStream(machine, call, signal) {
      const path = openAiPath(machine, "/completions");
      const body = await client.stream({ machine, path, body: completionRequest(call, true), signal }, SSE);
      return toTextChunks(parseSseJson(body), call);
    },

    async embed(machine, model, texts, signal) {
      const path = openAiPath(machine, "/embeddings");
      const raw = await client.json({ machine, path, body: embeddingsRequest(model, texts), signal });
      return fromEmbeddings(raw, texts.length);
    },

    async rerank(machine, model, query, documents, signal) {
      const path = openAiPath(machine, "/rerank");
      const raw = await client.json({ machine, path, body: rerankRequest(model, query, documents), signal });
      return fromRerank(raw, documents.length);
    },
  };
}
