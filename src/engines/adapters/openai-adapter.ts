import { parseSseJson } from "../http/sse.ts";
import type { UpstreamClient } from "../http/upstream-client.ts";
import { openAiPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { upstreamModel } from "../served-models.ts";
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

/**
 * The adapter for OpenAI-compatible servers (vLLM, SGLang, llama.cpp server, TGI): requests carry
 * the machine's name for the model, answers the catalogue id.
 */
export function createOpenAiAdapter(client: UpstreamClient): ProtocolAdapter<"openai"> {
  return {
    chat: {
      async chat(machine, call, signal) {
        const path = openAiPath(machine, "/chat/completions");
        const body = chatRequest(call, false, upstreamModel(machine, call.model));
        return toChatCompletion(await client.json({ machine, path, body, signal }), call);
      },

      async chatStream(machine, call, signal) {
        const path = openAiPath(machine, "/chat/completions");
        const body = chatRequest(call, true, upstreamModel(machine, call.model));
        return toChatChunks(await client.events({ machine, path, body, signal }, SSE, parseSseJson), call);
      },
    },

    completion: {
      async complete(machine, call, signal) {
        const path = openAiPath(machine, "/completions");
        const body = completionRequest(call, false, upstreamModel(machine, call.model));
        return toTextCompletion(await client.json({ machine, path, body, signal }), call);
      },

      async completeStream(machine, call, signal) {
        const path = openAiPath(machine, "/completions");
        const body = completionRequest(call, true, upstreamModel(machine, call.model));
        return toTextChunks(await client.events({ machine, path, body, signal }, SSE, parseSseJson), call);
      },
    },

    embeddings: {
      async embed(machine, model, texts, signal) {
        const path = openAiPath(machine, "/embeddings");
        const body = embeddingsRequest(upstreamModel(machine, model), texts);
        return fromEmbeddings(await client.json({ machine, path, body, signal }), texts.length);
      },
    },

    rerank: {
      async rerank(machine, model, query, documents, signal) {
        const path = openAiPath(machine, "/rerank");
        const body = rerankRequest(upstreamModel(machine, model), query, documents);
        return fromRerank(await client.json({ machine, path, body, signal }), documents.length);
      },
    },
  };
}
