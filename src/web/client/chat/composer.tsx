import { useEffect, useRef, useState } from "preact/hooks";
import type { WebModels } from "../../../contract/app-api.ts";
import { DictateButton } from "../audio/dictate-button.tsx";
import { type TextKey, t } from "../i18n/i18n.ts";
import { preferredModel, preferredTier, rememberPicks } from "./web-models.ts";

/** The app API's limit of a message, in characters. */
const MAX_CONTENT = 8000;

/**
 * The message box with the model and tier pickers. Enter sends, Shift+Enter starts a new line; while
 * an answer arrives the send button becomes the stop button.
 */
export function Composer(props: {
  models: WebModels | undefined;
  answering: boolean;
  onSend: (content: string, model: string, tier: string) => void;
  onStop: () => void;
}) {
  const { models } = props;
  const [text, setText] = useState("");
  // What the user picked on this page; until then the preselection (the last picks, else the defaults).
  const [model, setModel] = useState<string>();
  const [tier, setTier] = useState<string>();
  // Enter pressed before the model list arrived: the message goes as soon as the list is here.
  const [sendOnceLoaded, setSendOnceLoaded] = useState(false);
  const input = useRef<HTMLTextAreaElement>(null);

  useEffect(() => input.current?.focus(), []);

  const length = [...text].length;
  const tooLong = length > MAX_CONTENT;
  const ready = !props.answering && text.trim() !== "" && !tooLong;
  const chosen = model ?? (models ? preferredModel(models) : undefined);
  const chosenTier = tier ?? (models ? preferredTier(models) : "slow");
  const canSend = ready && chosen !== undefined;

  const submit = () => {
    if (!models && ready) {
      setSendOnceLoaded(true);
      return;
    }
    if (!canSend || chosen === undefined) return;
    rememberPicks(chosen, chosenTier);
    props.onSend(text, chosen, chosenTier);
    setText("");
  };

  // Enter pressed before the model list arrived: sent once it is here.
  useEffect(() => {
    if (!sendOnceLoaded || !models) return;
    setSendOnceLoaded(false);
    submit();
  }, [sendOnceLoaded, models]);

  return (
    <form
      class="composer"
      onSubmit={(event) => {
        event.preventDefault();
        submit();
      }}
    >
      <div class="composer-pickers">
        <label class="picker">
          <span>{t("chat.model")}</span>
          <select value={chosen} onChange={(event) => setModel(event.currentTarget.value)} name="model">
            {models?.data.map((option) => (
              <option key={option.id} value={option.id} disabled={!option.available}>
                {option.available ? option.id : t("chat.modelNotAvailable", { model: option.id })}
              </option>
            ))}
          </select>
        </label>
        <label class="picker">
          <span>{t("chat.tier")}</span>
          <select value={chosenTier} onChange={(event) => setTier(event.currentTarget.value)} name="tier">
            {models?.tiers.map((name) => (
              <option key={name} value={name}>
                {t(`chat.tier.${name}` as TextKey)}
              </option>
            ))}
          </select>
        </label>
      </div>
      {models && models.data.length === 0 && <p class="notice error">{t("chat.noModels")}</p>}
      <div class="composer-row">
        <textarea
          ref={input}
          name="content"
          rows={1}
          value={text}
          placeholder={t("chat.placeholder")}
          aria-label={t("chat.inputLabel")}
          aria-invalid={tooLong ? "true" : undefined}
          onInput={(event) => setText(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
              event.preventDefault();
              submit();
            }
          }}
        />
        <DictateButton
          disabled={props.answering}
          onText={(heard) => {
            setText((before) => (before.trim() === "" ? heard : `${before.trimEnd()} ${heard}`));
            input.current?.focus();
          }}
        />
        {props.answering ? (
          <button type="button" class="stop" onClick={props.onStop}>
            {t("chat.stop")}
          </button>
        ) : (
          <button type="submit" class="primary send" disabled={!canSend}>
            {t("chat.send")}
          </button>
        )}
      </div>
      {tooLong && (
        <p class="field-error" role="alert">
          {t("chat.tooLong", { max: MAX_CONTENT })}
        </p>
      )}
    </form>
  );
}
