import type { ConversationView, MessageView } from "../../contract/app-api.ts";
import type { ConversationRow, MessageRow } from "../../store/repositories/conversations.ts";

/** ISO 8601 with an explicit offset (`+00:00`), as the app API writes every timestamp. */
export function timestamp(date: Date): string {
  return date.toISOString().replace(/Z$/, "+00:00");
}

export function messageView(row: MessageRow): MessageView {
  const user = row.role === "user";
  return {
    id: row.id,
    role: user ? "user" : "assistant",
    content: row.content,
    created_at: timestamp(row.createdAt),
    prompt_tokens: user ? 0 : row.promptTokens,
    completion_tokens: user ? 0 : row.completionTokens,
    latency_ms: 0,
  };
}

/** A message as the web chat reads it: the app API's, with whether its client stopped it. */
export interface WebMessageView extends MessageView {
  stopped: boolean;
}

/** A conversation as the web chat reads it (`GET /api/v1/web/chat/sessions/{id}`). */
export interface WebConversationView extends Omit<ConversationView, "messages"> {
  messages: WebMessageView[];
}

export function webConversationView(row: ConversationRow, messages: MessageRow[]): WebConversationView {
  return {
    ...conversationView(row),
    messages: messages.map((message) => ({ ...messageView(message), stopped: message.stopped })),
  };
}

export function conversationView(row: ConversationRow, messages: MessageRow[] = []): ConversationView {
  return {
    id: row.id,
    title: row.title,
    model: row.model,
    created_at: timestamp(row.createdAt),
    updated_at: timestamp(row.updatedAt),
    messages: messages.map(messageView),
  };
}
