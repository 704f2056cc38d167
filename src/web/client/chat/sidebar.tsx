import { useState } from "preact/hooks";
import { useAuth } from "../auth/auth-state.tsx";
import { t } from "../i18n/i18n.ts";
import { Link } from "../router.tsx";
import { errorText } from "../ui/error-text.ts";
import { installationName } from "../ui/installation.ts";
import { useConversationLists } from "./conversation-list.ts";

/** The conversations, most recent first, and the ways to the other screens. */
export function Sidebar(props: { path: string; id: string }) {
  const auth = useAuth();
  const lists = useConversationLists();
  const [filter, setFilter] = useState("");
  const wanted = filter.trim().toLocaleLowerCase();
  const shown = wanted
    ? lists.active?.filter((conversation) => conversation.title.toLocaleLowerCase().includes(wanted))
    : lists.active;
  const current = props.path.startsWith("/c/") ? decodeURIComponent(props.path.slice(3)) : undefined;
  return (
    <nav class="sidebar" id={props.id} aria-label={t("chat.conversations")}>
      <div class="sidebar-head">
        <span class="brand">{installationName()}</span>
        <Link class="button primary new-chat" href="/">
          {t("chat.newChat")}
        </Link>
      </div>
      <h2 class="sidebar-heading">{t("chat.conversations")}</h2>
      {lists.failure !== undefined && (
        <p class="notice error" role="alert">
          {errorText(lists.failure)}
        </p>
      )}
      {lists.active === undefined && lists.failure === undefined && (
        <p class="muted">{t("common.loading")}</p>
      )}
      {lists.active?.length === 0 && (
        <p class="muted">
          {(lists.archived?.length ?? 0) > 0 ? t("chat.allArchived") : t("chat.noConversations")}
        </p>
      )}
      {(lists.active?.length ?? 0) > 5 && (
        <input
          type="search"
          class="conversation-filter"
          value={filter}
          placeholder={t("chat.search")}
          aria-label={t("chat.search")}
          onInput={(event) => setFilter(event.currentTarget.value)}
        />
      )}
      <ul class="conversation-list">
        {shown?.map((conversation) => (
          <li key={conversation.id}>
            <Link
              href={`/c/${encodeURIComponent(conversation.id)}`}
              class={conversation.id === current ? "conversation-link current" : "conversation-link"}
              aria-current={conversation.id === current ? "page" : undefined}
            >
              {conversation.title}
            </Link>
          </li>
        ))}
      </ul>
      <div class="sidebar-foot">
        <Link
          href="/archived"
          class="nav-link"
          aria-current={props.path === "/archived" ? "page" : undefined}
        >
          {t("chat.archived")}
          {lists.archived && lists.archived.length > 0 ? ` (${lists.archived.length})` : ""}
        </Link>
        <Link href="/kb" class="nav-link" aria-current={props.path.startsWith("/kb") ? "page" : undefined}>
          {t("chat.knowledgeBases")}
        </Link>
        <Link
          href="/settings"
          class="nav-link"
          aria-current={props.path === "/settings" ? "page" : undefined}
        >
          {t("chat.settings")}
        </Link>
        <p class="muted small account-line">{auth.user?.email}</p>
      </div>
    </nav>
  );
}
