import { t } from "../i18n/i18n.ts";
import { Link } from "../router.tsx";
import { useConversationLists } from "./conversation-list.ts";

/** The archived conversations (archiving exists only in the web chat); each opens as usual. */
export function ArchivedPage() {
  const lists = useConversationLists();
  return (
    <section class="page" aria-labelledby="archived-title">
      <h1 id="archived-title">{t("chat.archivedTitle")}</h1>
      {lists.archived === undefined && <p class="muted">{t("common.loading")}</p>}
      {lists.archived?.length === 0 && <p class="muted">{t("chat.noArchived")}</p>}
      <ul class="archived-list">
        {lists.archived?.map((conversation) => (
          <li key={conversation.id}>
            <Link href={`/c/${encodeURIComponent(conversation.id)}`}>{conversation.title}</Link>
            <time class="muted small" dateTime={conversation.updated_at}>
              {new Date(conversation.updated_at).toLocaleDateString()}
            </time>
          </li>
        ))}
      </ul>
    </section>
  );
}
