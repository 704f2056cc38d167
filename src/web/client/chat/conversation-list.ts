import { useEffect, useState } from "preact/hooks";
import type { ConversationView as Conversation } from "../../../contract/app-api.ts";
import { api } from "../api/api-client.ts";

/** The conversations of the sidebar and the archived ones, kept once for the page. */
interface Lists {
  active: Conversation[] | undefined;
  archived: Conversation[] | undefined;
  failure: unknown;
}

let lists: Lists = { active: undefined, archived: undefined, failure: undefined };
const listeners = new Set<() => void>();

function set(next: Partial<Lists>): void {
  lists = { ...lists, ...next };
  for (const listener of listeners) listener();
}

/** The lists, loaded on first use; the component renders again when they change. */
export function useConversationLists(): Lists {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1);
    listeners.add(listener);
    if (lists.active === undefined) void reloadLists();
    return () => void listeners.delete(listener);
  }, []);
  return lists;
}

/** Reads both lists again from the app API. */
export async function reloadLists(): Promise<void> {
  try {
    const [active, archived] = await Promise.all([
      api<Conversation[]>("GET", "/chat/sessions"),
      api<{ data: Conversation[] }>("GET", "/web/chat/sessions/archived"),
    ]);
    set({ active, archived: archived.data, failure: undefined });
  } catch (failure) {
    set({ failure });
  }
}

/** Whether the conversation is archived, as far as the page knows. */
export function isArchived(id: string): boolean {
  return lists.archived?.some((conversation) => conversation.id === id) ?? false;
}

/** A new or changed conversation: first in its list when it moved forward. */
export function putConversation(conversation: Conversation): void {
  const listed = { ...conversation, messages: [] };
  if (isArchived(conversation.id)) {
    set({ archived: lists.archived?.map((c) => (c.id === conversation.id ? listed : c)) });
    return;
  }
  const others = (lists.active ?? []).filter((c) => c.id !== conversation.id);
  const active = [listed, ...others].sort((a, b) => b.updated_at.localeCompare(a.updated_at));
  set({ active });
}

/** Moves a conversation between the lists after archive or unarchive. */
export function setArchivedLocally(conversation: Conversation, archived: boolean): void {
  const listed = { ...conversation, messages: [] };
  const active = (lists.active ?? []).filter((c) => c.id !== conversation.id);
  const archivedList = (lists.archived ?? []).filter((c) => c.id !== conversation.id);
  const byRecent = (a: Conversation, b: Conversation) => b.updated_at.localeCompare(a.updated_at);
  if (archived) set({ active, archived: [listed, ...archivedList].sort(byRecent) });
  else set({ active: [listed, ...active].sort(byRecent), archived: archivedList });
}

/** A deleted conversation leaves both lists. */
export function dropConversation(id: string): void {
  set({
    active: lists.active?.filter((c) => c.id !== id),
    archived: lists.archived?.filter((c) => c.id !== id),
  });
}

/** Forgets everything (sign-out). */
export function clearLists(): void {
  lists = { active: undefined, archived: undefined, failure: undefined };
}
