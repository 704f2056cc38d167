import { useEffect, useRef, useState } from "preact/hooks";
import type { WebModels } from "../api/types.ts";
import { DictateButton } from "../audio/dictate-button.tsx";
import { type TextKey, t } from "../i18n/i18n.ts";
import { preferredModel, preferredTier, rememberPicks } from "./web-models.ts";

/** The app API's limit of a message (spec "Size and content limits"). */
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
  const [model, setModel] = useState<string>();
  const [tier, setTier] = useState("slow");
  // Enter pressed before the model list arrived: the message goes as soon as a model is picked.
  const [sendOnceLoaded, setSendOnceLoaded] = useState(false);
  const input = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (!models) return;
    setModel(preferredModel(models));
    setTier(preferredTier(models));
  }, [models]);
  useEffect(() => input.current?.focus(), []);

  const length = [...text].length;
  const tooLong = length > MAX_CONTENT;
  const ready = !props.answering && text.trim() !== "" && !tooLong;
  const canSend = ready && model !== undefined;

  const submit = () => {
    if (!models && ready) {
      setSendOnceLoaded(true);
      return;
    }
    if (!canSend || model === undefined) return;
    rememberPicks(model, tier);
    props.onSend(text, model, tier);
    setText("");
  };

  useEffect(() => {
    if (!sendOnceLoaded || !models) return;
    if (model === undefined && models.data.length > 0) return; // picked by the effect above, next render
    setSendOnceLoaded(false);
    submit();
  }, [sendOnceLoaded, models, model]);

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
          <select value={model} onChange={(event) => setModel(event.currentTarget.value)} name="model">
            {models?.data.map((option) => (
              <option key={option.id} value={option.id} disabled={!option.available}>
                {option.available ? option.id : t("chat.modelNotAvailable", { model: option.id })}
              </option>
            ))}
          </select>
        </label>
        <label class="picker">
          <span>{t("chat.tier")}</span>
          <select value={tier} onChange={(event) => setTier(event.currentTarget.value)} name="tier">
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
