import type { RouteLimit } from "./route-limits.ts";

/**
 * Per-user limits of the app API: one counter shared by every limited call,
 * each compared with its own limit. `GET /audio/voices` is not limited: it declares nothing.
 */
export const USER_LIMITS = {
  chatMessages: { counter: "user", limit: 30 }, // POST /chat/sessions/{id}/messages
  createKnowledgeBase: { counter: "user", limit: 30 }, // POST /rag/kb
  knowledgeBaseDocs: { counter: "user", limit: 10 }, // POST /rag/kb/{slug}/docs
  knowledgeBaseChat: { counter: "user", limit: 30 }, // POST /rag/kb/{slug}/chat
  transcribe: { counter: "user", limit: 30 }, // POST /audio/transcribe
  synthesize: { counter: "user", limit: 60 }, // POST /audio/synthesize
} as const satisfies Record<string, RouteLimit>;

/** Name of a user-limited endpoint of the table. */
export type UserLimitName = keyof typeof USER_LIMITS;

/** Route config of a user-limited endpoint: `app.post("/audio/transcribe", { config: userLimit("transcribe") }, ...)`. */
export function userLimit(name: UserLimitName): { userLimit: RouteLimit } {
  return { userLimit: USER_LIMITS[name] };
}
