import { fakeEmbedding, wordEmbedding, wordOverlap } from "./fake-generation.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
} from "./fake-server.ts";

type Json = Record<string, unknown>;

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

function errorBody(status: number, message: string): unknown {
  const errorType =
    status === 422 || status === 413 ? "Validation" : status === 401 ? "Unauthorized" : "Backend";
  return { error: message, error_type: errorType };
}

function strings(value: unknown): string[] | undefined {
  const list = typeof value === "string" ? [value] : value;
  return Array.isArray(list) && list.every((item) => typeof item === "string") ? list : undefined;
}

const teiProtocol: FakeProtocol = {
  errorBody,
  handle(request: FakeRequest, settings: FakeSettings): FakeReply {
    const { method, path } = request;
    if (method === "GET" && path === "/health") return { type: "empty", status: 200 };
    if (method === "GET" && path === "/info") {
      return json(200, {
        // TEI serves one model; `models` names it.
        model_id: settings.models?.[0] ?? "fake/bge",
        model_type: { embedding: { pooling: "cls" } },
        max_input_length: 8192,
      });
    }
    const body = isJson(request.body) ? request.body : undefined;
    if (method === "POST" && path === "/embed") {
      const inputs = strings(body?.inputs);
      if (inputs === undefined || inputs.length === 0)
        return json(422, errorBody(422, "`inputs` cannot be empty"));
      return json(
        200,
        inputs.map((text) =>
          settings.wordEmbeddings
            ? wordEmbedding(text, settings.dimensions)
            : fakeEmbedding(text, settings.dimensions),
        ),
      );
    }
    if (method === "POST" && path === "/rerank") {
      const texts = strings(body?.texts);
      const query = body?.query;
      if (typeof query !== "string" || texts === undefined || texts.length === 0) {
        return json(422, errorBody(422, "`texts` cannot be empty"));
      }
      const withText = body?.return_text === true;
      return json(
        200,
        texts
          .map((text, index) => ({ index, score: wordOverlap(query, text), ...(withText ? { text } : {}) }))
          .sort((a, b) => b.score - a.score),
      );
    }
    return json(404, errorBody(404, "Not Found"));
  },
};

/**
 * A fake text-embeddings-inference server: `/embed`, `/rerank` (score = share of query words),
 * `/health`, `/info` (whose `model_id` is the first of `models`, else `fake/bge`). Like TEI, it is
 * sent no model name.
 */
export class FakeTeiServer extends FakeServer {
  constructor(settings: Partial<FakeSettings> = {}) {
    super(teiProtocol, settings);
  }
}
