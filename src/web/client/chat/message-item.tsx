import { ReadAloudButton } from "../audio/read-aloud-button.tsx";
import { type TextKey, t } from "../i18n/i18n.ts";
import { MarkdownView } from "../markdown/markdown-view.tsx";
import type { ChatMessage } from "./conversation-store.ts";
import { CopyAnswerButton } from "./copy-answer-button.tsx";

const KNOWN_FAILURES = new Set(["zone_unavailable", "model_unavailable", "upstream_error"]);

function failureText(failure: string | undefined): string | undefined {
  if (failure === undefined) return undefined;
  return KNOWN_FAILURES.has(failure) ? t(`chat.error.${failure}` as TextKey) : failure;
}

/** One message: the user's as plain text, an answer as Markdown, a failed answer with its retry. */
export function MessageItem(props: { message: ChatMessage; onRetry?: (() => void) | undefined }) {
  const { message } = props;
  if (message.role === "user") {
    return (
      <article class="message user" aria-label={t("chat.you")}>
        <div class="bubble">{message.content}</div>
      </article>
    );
  }
  if (message.state === "failed") {
    const detail = failureText(message.failure);
    // The pieces that arrived before a failure midway stay until a reload (only the failure is saved).
    return (
      <article class="message assistant failed" aria-label={t("chat.assistant")}>
        <div class="bubble">
          {message.content !== "" && <MarkdownView source={message.content} />}
          <div role="alert">
            <p class="failure-text">{t("chat.failed")}</p>
            {detail && <p class="failure-detail muted small">{detail}</p>}
            {props.onRetry && (
              <button type="button" class="retry" onClick={props.onRetry}>
                {t("common.retry")}
              </button>
            )}
          </div>
        </div>
      </article>
    );
  }
  const streaming = message.state === "streaming";
  return (
    <article
      class={streaming ? "message assistant streaming" : "message assistant"}
      aria-label={t("chat.assistant")}
      aria-busy={streaming}
    >
      <div class="bubble">
        {message.content === "" && streaming ? (
          <span class="typing" aria-hidden="true" />
        ) : (
          <MarkdownView source={message.content} />
        )}
        {message.state === "stopped" && <p class="stopped muted small">{t("chat.stopped")}</p>}
      </div>
      {!streaming && message.content !== "" && (
        <div class="message-actions">
          <CopyAnswerButton text={message.content} />
          <ReadAloudButton text={message.content} />
        </div>
      )}
    </article>
  );
}
