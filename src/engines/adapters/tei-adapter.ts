import type { UpstreamClient } from "../http/upstream-client.ts";
import { rootPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { fromTeiEmbed, fromTeiRerank, teiEmbedRequest, teiRerankRequest } from "./tei-transforms.ts";

/** The adapter for text-embeddings-inference servers (embeddings and rerank; the model is the server's). */
export function createTeiAdapter(client: UpstreamClient): ProtocolAdapter<"tei"> {
  return {
    embeddings: {
      async embed(machine, _model, texts, signal) {
        const raw = await client.json({
          machine,
          path: rootPath(machine, "/embed"),
          body: teiEmbedRequest(texts),
          signal,
        });
        return fromTeiEmbed(raw, texts.length);
      },
    },

    rerank: {
      async rerank(machine, _model, query, documents, signal) {
        const path = rootPath(machine, "/rerank");
        const raw = await client.json({ machine, path, body: teiRerankRequest(query, documents), signal });
        return fromTeiRerank(raw, documents.length);
      },
    },
  };
}
