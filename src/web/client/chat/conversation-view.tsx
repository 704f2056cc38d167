import { useEffect, useRef, useState } from "preact/hooks";
import type { ConversationView as Conversation } from "../../../contract/app-api.ts";
import { api } from "../api/api-client.ts";
import { t } from "../i18n/i18n.ts";
import { navigate } from "../router.tsx";
import { errorText } from "../ui/error-text.ts";
import { installationName } from "../ui/installation.ts";
import { Composer } from "./composer.tsx";
import { ConversationHeader } from "./conversation-header.tsx";
import { adopt, type ChatMessage, send, stop, useConversation } from "./conversation-store.ts";
import { MessageItem } from "./message-item.tsx";
import { useWebModels } from "./web-models.ts";

/** A conversation, or a new one when `id` is undefined (created by the first message sent). */
export function ConversationView(props: { id: string | undefined }) {
  const { id } = props;
  const state = useConversation(id);
  const { models, failure: modelsFailure } = useWebModels();
  const [createFailure, setCreateFailure] = useState<string>();
  const list = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);

  const title = state.conversation?.title;
  useEffect(() => {
    document.title = title ? `${title} · ${installationName()}` : installationName();
  }, [title]);

  // Follow the answer while the reader is at the bottom; leave them be when they scrolled up.
  useEffect(() => {
    const element = list.current;
    if (element && pinned.current) element.scrollTop = element.scrollHeight;
  });

  const onSend = async (content: string, model: string, tier: string) => {
    setCreateFailure(undefined);
    let target = id;
    if (target === undefined) {
      try {
        const created = await api<Conversation>("POST", "/chat/sessions", { model });
        adopt(created);
        target = created.id;
        navigate(`/c/${encodeURIComponent(created.id)}`);
      } catch (error) {
        setCreateFailure(errorText(error));
        return;
      }
    }
    pinned.current = true;
    await send(target, content, model, tier);
  };

  if (state.notFound) {
    return (
      <section class="page">
        <p class="notice error" role="alert">
          {t("chat.notFound")}
        </p>
      </section>
    );
  }
  const messages = state.messages;
  const last = messages[messages.length - 1];
  const retryOf = (message: ChatMessage, index: number) => {
    if (id === undefined || message !== last || message.state !== "failed" || state.answering)
      return undefined;
    const asked = messages
      .slice(0, index)
      .reverse()
      .find((m) => m.role === "user");
    if (!asked) return undefined;
    const model = message.model ?? state.conversation?.model;
    if (!model) return undefined;
    return () => void send(id, asked.content, model, message.tier ?? "slow");
  };

  return (
    <div class="conversation">
      {state.conversation && <ConversationHeader conversation={state.conversation} />}
      <div
        class="messages"
        ref={list}
        aria-live="polite"
        aria-relevant="additions"
        onScroll={(event) => {
          const element = event.currentTarget;
          pinned.current = element.scrollHeight - element.scrollTop - element.clientHeight < 48;
        }}
      >
        {id === undefined && messages.length === 0 && <p class="empty-chat">{t("chat.empty")}</p>}
        {state.loading && messages.length === 0 && <p class="muted">{t("common.loading")}</p>}
        {state.failure && (
          <p class="notice error" role="alert">
            {state.failure}
          </p>
        )}
        {messages.map((message, index) => (
          <MessageItem key={message.key} message={message} onRetry={retryOf(message, index)} />
        ))}
      </div>
      {(createFailure || modelsFailure !== undefined) && (
        <p class="notice error" role="alert">
          {createFailure ?? errorText(modelsFailure)}
        </p>
      )}
      <Composer
        models={models}
        answering={state.answering}
        onSend={(content, model, tier) => void onSend(content, model, tier)}
        onStop={() => id !== undefined && stop(id)}
      />
    </div>
  );
}
