import { useState } from "preact/hooks";
import { t } from "../i18n/i18n.ts";
import { copyText } from "../markdown/markdown-view.tsx";

/** Copies an answer's Markdown as it was written. */
export function CopyAnswerButton(props: { text: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      class="message-action"
      onClick={() =>
        void copyText(props.text).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1500);
        })
      }
    >
      {copied ? t("chat.copied") : t("chat.copy")}
    </button>
  );
}
