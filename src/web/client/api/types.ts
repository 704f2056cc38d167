/** The signed-in user, as `GET /api/v1/web/me` tells it. */
export interface User {
  id: string;
  email: string;
  email_verified: boolean;
  language: string;
}

/** The login response of the app API (docs/app-auth.md#login-response). */
export interface LoginResponse {
  access_token: string;
  refresh_token: string;
  access_expires_in_seconds: number;
  refresh_expires_in_seconds: number;
  user: { id: string; email: string; email_verified: boolean };
}

/** A message of a conversation (docs/app-chat.md#conversation-and-message). */
export interface Message {
  id: string;
  role: "user" | "assistant";
  content: string;
  created_at: string;
  prompt_tokens: number;
  completion_tokens: number;
  latency_ms: number;
  /** Only in the web chat's read (`GET /web/chat/sessions/{id}`): an answer its client stopped. */
  stopped?: boolean;
}

/** A conversation; `messages` is empty in lists. */
export interface Conversation {
  id: string;
  title: string;
  model: string;
  created_at: string;
  updated_at: string;
  messages: Message[];
}

/** One chat model of `GET /api/v1/web/models`. */
export interface WebModel {
  id: string;
  vision: boolean;
  available: boolean;
  machines: number;
}

/** `GET /api/v1/web/models`. */
export interface WebModels {
  data: WebModel[];
  default_model: string;
  tiers: string[];
  default_tier: string;
}
