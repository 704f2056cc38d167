import { useEffect, useState } from "preact/hooks";
import type {
  ChatEvent,
  ConversationView as Conversation,
  MessageView as Message,
} from "../../../contract/app-api.ts";
import { api, apiFetch } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import { readEventStream } from "../api/sse-reader.ts";
import { errorText } from "../ui/error-text.ts";
import { putConversation } from "./conversation-list.ts";

/** The fixed text the app API saves for an answer that failed. */
export const FAILED_ANSWER = "The model did not answer. Please try again.";

/** A message as the page shows it: saved, or an answer still arriving, failed or stopped. */
export interface ChatMessage {
  key: string;
  role: "user" | "assistant";
  content: string;
  state: "saved" | "streaming" | "failed" | "stopped";
  /** Why an answer failed, in the user's words (the stream's error code, or the refusal). */
  failure?: string;
  /** The model of the message sent, to try it again with. */
  model?: string;
  tier?: string;
}

/** One conversation on the page. */
export interface ConversationState {
  conversation: Conversation | undefined;
  messages: ChatMessage[];
  loading: boolean;
  notFound: boolean;
  failure: string | undefined;
  /** An answer is arriving; `stop()` ends it. */
  answering: boolean;
}

const states = new Map<string, ConversationState>();
const controllers = new Map<string, AbortController>();
const listeners = new Map<string, Set<() => void>>();
let serial = 0;

function empty(): ConversationState {
  return {
    conversation: undefined,
    messages: [],
    loading: false,
    notFound: false,
    failure: undefined,
    answering: false,
  };
}

function stateOf(id: string): ConversationState {
  return states.get(id) ?? empty();
}

function update(id: string, change: (state: ConversationState) => Partial<ConversationState>): void {
  const state = stateOf(id);
  states.set(id, { ...state, ...change(state) });
  for (const listener of listeners.get(id) ?? []) listener();
}

function fromSaved(message: Message): ChatMessage {
  const failed = message.role === "assistant" && message.content === FAILED_ANSWER;
  return {
    key: message.id,
    role: message.role,
    // A failed answer is saved as the fixed text; the page shows its own words for it.
    content: failed ? "" : message.content,
    state: failed ? "failed" : message.stopped ? "stopped" : "saved",
  };
}

/** The conversation's state; loaded from the app API on first use. Answers go on while another conversation is shown. */
export function useConversation(id: string | undefined): ConversationState {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (id === undefined) return;
    const listener = () => setTick((tick) => tick + 1);
    const set = listeners.get(id) ?? new Set();
    listeners.set(id, set);
    set.add(listener);
    const known = states.get(id);
    if (!known || (!known.answering && !known.loading)) void load(id);
    return () => void set.delete(listener);
  }, [id]);
  return id === undefined ? empty() : stateOf(id);
}

/** Reads the conversation with its messages again (the web chat's read: stopped answers are marked). */
export async function load(id: string): Promise<void> {
  update(id, () => ({ loading: true, failure: undefined }));
  try {
    const conversation = await api<Conversation>("GET", `/web/chat/sessions/${encodeURIComponent(id)}`);
    update(id, (state) =>
      state.answering
        ? { loading: false, conversation }
        : { loading: false, conversation, notFound: false, messages: conversation.messages.map(fromSaved) },
    );
  } catch (error) {
    if (error instanceof ApiError && error.status === 404)
      update(id, () => ({ loading: false, notFound: true }));
    else update(id, () => ({ loading: false, failure: errorText(error) }));
  }
}

/** A conversation just created: known without reading it. */
export function adopt(conversation: Conversation): void {
  update(conversation.id, () => ({ conversation, messages: [], notFound: false }));
  putConversation(conversation);
}

/** Sets the conversation's header data after a rename and the like. */
export function setConversation(conversation: Conversation): void {
  update(conversation.id, () => ({ conversation }));
  putConversation(conversation);
}

/** Forgets a deleted conversation. */
export function forget(id: string): void {
  controllers.get(id)?.abort();
  states.delete(id);
}

/** Closes the answer stream, the app API's way to stop an answer (no stop endpoint). What arrived stays. */
export function stop(id: string): void {
  controllers.get(id)?.abort();
}

/**
 * Sends a message and follows its answer stream (`POST /chat/sessions/{id}/messages`), appending
 * each `delta`. A failed answer shows the failure text under the pieces that arrived (the app API
 * saves only the fixed text: they are gone after a reload); a stopped one keeps its text.
 */
export async function send(id: string, content: string, model: string, tier: string): Promise<void> {
  if (controllers.has(id)) return;
  const controller = new AbortController();
  controllers.set(id, controller);
  const answerKey = `live-${++serial}`;
  update(id, (state) => ({
    answering: true,
    messages: [
      ...state.messages,
      { key: `live-${++serial}`, role: "user", content, state: "saved" },
      { key: answerKey, role: "assistant", content: "", state: "streaming", model, tier },
    ],
  }));
  const answer = (change: Partial<ChatMessage>) =>
    update(id, (state) => ({
      messages: state.messages.map((message) =>
        message.key === answerKey ? { ...message, ...change } : message,
      ),
    }));
  let text = "";
  let outcome: "ok" | "error" | undefined;
  let failed = false;
  let titleQueued = false;
  try {
    const response = await apiFetch(
      `/chat/sessions/${encodeURIComponent(id)}/messages`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content, model, tier }),
      },
      { signal: controller.signal },
    );
    await readEventStream<ChatEvent>(response, (event) => {
      if (event.type === "delta") {
        text += event.text;
        answer({ content: text });
      } else if (event.type === "error") {
        failed = true;
        answer({ state: "failed", content: text, failure: event.code });
      } else if (event.type === "done") {
        outcome = event.outcome;
        titleQueued = event.title_job_queued;
      }
    });
    // A stream that ended without `done` (or without saying why it failed) failed all the same.
    if (outcome === "ok") answer({ state: "saved" });
    else if (!failed) answer({ state: "failed", content: text, failure: "upstream_error" });
  } catch (error) {
    if (controller.signal.aborted) answer({ state: "stopped" });
    else answer({ state: "failed", content: text, failure: errorText(error) });
  } finally {
    controllers.delete(id);
    update(id, () => ({ answering: false }));
  }
  if (!states.has(id)) return;
  await refreshHeader(id, titleQueued);
}

// The automatic title is made by a background job: look again a few times until it changed.
const TITLE_LOOKS_MS = [800, 1500, 3000, 6000];

async function refreshHeader(id: string, titleQueued: boolean): Promise<void> {
  const before = stateOf(id).conversation?.title;
  for (const wait of titleQueued ? TITLE_LOOKS_MS : [0]) {
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (!states.has(id)) return;
    try {
      const conversation = await api<Conversation>("GET", `/chat/sessions/${encodeURIComponent(id)}`);
      setConversation(conversation);
      if (conversation.title !== before) return;
    } catch {
      return;
    }
  }
}
