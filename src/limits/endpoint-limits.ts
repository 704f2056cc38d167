import type { RouteLimit } from "./route-limits.ts";

/**
 * The endpoint limits of the key API (per API key, window from the first request). `GET /v1/models`
 * and `GET /v1/knowledge-bases` are not limited: they declare nothing.
 */
export const ENDPOINT_LIMITS = {
  chatCompletions: { counter: "shared", limit: 60, pays: true }, // POST /v1/chat/completions
  completions: { counter: "shared", limit: 60, pays: true }, // POST /v1/completions
  responses: { counter: "shared", limit: 60, pays: true }, // POST /v1/responses
  knowledgeBaseAsk: { counter: "shared", limit: 30, pays: true }, // POST /v1/knowledge-bases/{slug}/ask
  embeddings: { counter: "shared", limit: 120, pays: true }, // POST /v1/embeddings
  rerank: { counter: "shared", limit: 120, pays: true }, // POST /v1/rerank
  audioTranscriptions: { counter: "shared", limit: 30, pays: true }, // POST /v1/audio/transcriptions
  audioSpeech: { counter: "shared", limit: 120, pays: true }, // POST /v1/audio/speech
  imageGenerations: { counter: "images-generations", limit: 30, pays: true }, // POST /v1/images/generations
  videoCreate: { counter: "videos-create", limit: 20, pays: true }, // POST /v1/videos
  videoList: { counter: "videos-list", limit: 120 }, // GET /v1/videos
  videoRetrieve: { counter: "videos-retrieve", limit: 600 }, // GET /v1/videos/{id}
  videoContent: { counter: "videos-content", limit: 120 }, // GET /v1/videos/{id}/content
  videoDelete: { counter: "videos-delete", limit: 60 }, // DELETE /v1/videos/{id}
} as const satisfies Record<string, RouteLimit>;

/** Name of an endpoint of the table. */
export type EndpointLimitName = keyof typeof ENDPOINT_LIMITS;

/** Route config of a limited key-API endpoint: `app.post(path, { config: endpointLimit("embeddings") }, handler)`. */
export function endpointLimit(name: EndpointLimitName): { endpointLimit: RouteLimit } {
  return { endpointLimit: { ...ENDPOINT_LIMITS[name], name: configName(name) } };
}

/** `chatCompletions` -> `chat_completions`, the name in `rate_limits.endpoint_limits`. */
function configName(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
