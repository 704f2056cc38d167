/**
 * The app API's wire types that the server writes and the web chat reads: one module, imported by
 * both (the web chat's build takes the types alone). Field names are the API's own (snake_case).
 */

/** The codes of a chat answer's `error` event. */
export type ChatErrorCode = "zone_unavailable" | "model_unavailable" | "upstream_error";

/** The last event of an answer's stream: what it used and how it ended. */
export interface AnswerDone {
  type: "done";
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number;
  outcome: "ok" | "error";
}

/** One event of a chat answer's stream (`POST /api/v1/chat/sessions/{id}/messages`). */
export type ChatEvent =
  | { type: "delta"; text: string }
  | { type: "error"; code: ChatErrorCode; message: string }
  | (AnswerDone & { title_job_queued: boolean });

/** A knowledge base as the app API shows it. */
export interface KnowledgeBaseView {
  slug: string;
  name: string;
  description: string | null;
  /** Shared by the operator: every key of the installation may ask it. */
  shared: boolean;
  /** The signed-in user's own base (false: a shared base of another account). */
  owned: boolean;
  documents: number;
  ready_documents: number;
  created_at: string;
}

/** The states of a document: read in the background after its upload. */
export type KbDocumentStatus = "queued" | "processing" | "ready" | "failed";

/** A document as the app API shows it. */
export interface KbDocumentView {
  id: string;
  filename: string;
  format: string;
  size_bytes: number;
  status: KbDocumentStatus;
  /** Why a failed document could not be read. */
  error: string | null;
  passages: number;
  pages: number | null;
  created_at: string;
  updated_at: string;
}

/** A source of an answer as both APIs show it; `index` is the number the answer cites as [n]. */
export interface KbSource {
  index: number;
  document: string;
  document_id: string;
  page: number | null;
  section: string | null;
  passage: string;
  score: number;
}

/** One event of a knowledge-base answer's stream (`POST /api/v1/rag/kb/{slug}/chat`). */
export type KbEvent =
  | { type: "sources"; sources: KbSource[] }
  | { type: "delta"; text: string }
  | { type: "error"; code: "upstream_error"; message: string }
  | AnswerDone;

/** The signed-in user, as `GET /api/v1/web/me` (and its `PATCH`) tells it. */
export interface WebUser {
  id: string;
  email: string;
  email_verified: boolean;
  language: string;
}

/** The login response of the app API (docs/app-auth.md#login-response): the pair, their lifetimes, the user. */
export interface LoginResponse {
  /** The access token again, under its older name. */
  token: string;
  access_token: string;
  refresh_token: string;
  /** `access_expires_in_seconds` again, under its older name. */
  expires_in_seconds: number;
  access_expires_in_seconds: number;
  refresh_expires_in_seconds: number;
  user: { id: string; email: string; email_verified: boolean };
}

/** A message of a conversation (docs/app-chat.md#conversation-and-message). */
export interface MessageView {
  id: string;
  role: "user" | "assistant";
  content: string;
  created_at: string;
  prompt_tokens: number;
  completion_tokens: number;
  /** 0 when read from the server: the real time is in the stream's `done` event. */
  latency_ms: number;
  /** Only in the web chat's read (`GET /web/chat/sessions/{id}`): an answer its client stopped. */
  stopped?: boolean;
}

/** A conversation; `messages` is empty in lists. */
export interface ConversationView {
  id: string;
  title: string;
  model: string;
  created_at: string;
  updated_at: string;
  messages: MessageView[];
}

/** One chat model as the web chat's picker offers it (`GET /api/v1/web/models`). */
export interface WebModel {
  id: string;
  vision: boolean;
  /** False when it cannot answer now (the picker shows it disabled). */
  available: boolean;
  /** The machines that serve it, up or not. */
  machines: number;
}

/** `GET /api/v1/web/models`: the chat models, the default one, and the tiers. */
export interface WebModels {
  data: WebModel[];
  default_model: string;
  tiers: readonly string[];
  default_tier: string;
}
