import { useState } from "preact/hooks";
import type { ConversationView as Conversation } from "../../../contract/app-api.ts";
import { api } from "../api/api-client.ts";
import { t } from "../i18n/i18n.ts";
import { navigate } from "../router.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { errorText } from "../ui/error-text.ts";
import { dropConversation, isArchived, setArchivedLocally } from "./conversation-list.ts";
import { forget, setConversation } from "./conversation-store.ts";

/** The conversation's title and what can be done with it: rename, archive or unarchive, delete. */
export function ConversationHeader(props: { conversation: Conversation }) {
  const { conversation } = props;
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(conversation.title);
  const [confirming, setConfirming] = useState(false);
  const [failure, setFailure] = useState<string>();
  const archived = isArchived(conversation.id);
  const path = `/chat/sessions/${encodeURIComponent(conversation.id)}`;

  const act = async (work: () => Promise<void>) => {
    setFailure(undefined);
    try {
      await work();
    } catch (error) {
      setFailure(errorText(error));
    }
  };
  const rename = (event: Event) => {
    event.preventDefault();
    void act(async () => {
      const renamed = await api<Conversation>("PATCH", path, { title: title.trim() });
      setConversation(renamed);
      setEditing(false);
    });
  };
  const toggleArchive = () =>
    act(async () => {
      const action = archived ? "unarchive" : "archive";
      const changed = await api<Conversation>("POST", `/web${path}/${action}`);
      setArchivedLocally(changed, !archived);
      setConversation(changed);
    });
  const remove = () =>
    act(async () => {
      setConfirming(false);
      await api("DELETE", path);
      dropConversation(conversation.id);
      forget(conversation.id);
      navigate(archived ? "/archived" : "/", { replace: true });
    });

  return (
    <header class="conversation-header">
      {editing ? (
        <form class="rename-form" onSubmit={rename}>
          <label class="offscreen" for="rename-title">
            {t("chat.renameLabel")}
          </label>
          <input
            id="rename-title"
            value={title}
            maxLength={255}
            required
            ref={(element) => element?.focus()}
            onInput={(event) => setTitle(event.currentTarget.value)}
            onKeyDown={(event) => {
              if (event.key === "Escape") setEditing(false);
            }}
          />
          <button type="submit" class="primary" disabled={title.trim() === ""}>
            {t("common.save")}
          </button>
          <button type="button" onClick={() => setEditing(false)}>
            {t("common.cancel")}
          </button>
        </form>
      ) : (
        <h1 class="conversation-title">{conversation.title}</h1>
      )}
      {!editing && (
        <fieldset class="conversation-actions">
          <legend class="offscreen">{t("chat.conversationActions", { title: conversation.title })}</legend>
          <button
            type="button"
            onClick={() => {
              setTitle(conversation.title);
              setEditing(true);
            }}
          >
            {t("chat.rename")}
          </button>
          <button type="button" onClick={() => void toggleArchive()}>
            {archived ? t("chat.unarchive") : t("chat.archive")}
          </button>
          <button type="button" class="danger-outline" onClick={() => setConfirming(true)}>
            {t("chat.delete")}
          </button>
        </fieldset>
      )}
      {archived && <p class="notice small">{t("chat.archivedNotice")}</p>}
      <ErrorNotice message={failure} />
      {confirming && (
        <ConfirmDialog
          title={t("chat.deleteTitle")}
          text={t("chat.deleteText", { title: conversation.title })}
          confirm={t("chat.delete")}
          danger
          onConfirm={() => void remove()}
          onCancel={() => setConfirming(false)}
        />
      )}
    </header>
  );
}
