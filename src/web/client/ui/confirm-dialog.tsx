import { useEffect, useRef } from "preact/hooks";
import { t } from "../i18n/i18n.ts";

/** A modal question (a native <dialog>: focus stays inside, Escape cancels). */
export function ConfirmDialog(props: {
  title: string;
  text: string;
  confirm: string;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
  }, []);
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="confirm-title" onCancel={props.onCancel}>
      <h2 id="confirm-title">{props.title}</h2>
      <p>{props.text}</p>
      <div class="button-row end">
        <button type="button" onClick={props.onCancel}>
          {t("common.cancel")}
        </button>
        <button type="button" class={props.danger ? "danger" : "primary"} onClick={props.onConfirm}>
          {props.confirm}
        </button>
      </div>
    </dialog>
  );
}
