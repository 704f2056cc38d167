import type { InputHTMLAttributes } from "preact";
import { useId } from "preact/hooks";

type FieldProps = InputHTMLAttributes<HTMLInputElement> & {
  label: string;
  hint?: string;
  error?: string | undefined;
  onValue: (value: string) => void;
};

/** A labelled input with its hint and its error, wired for screen readers. */
export function FormField(props: FieldProps) {
  const { label, hint, error, onValue, ...input } = props;
  const id = useId();
  const described = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        {...input}
        id={id}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={described || undefined}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {error && (
        <small id={`${id}-error`} class="field-error">
          {error}
        </small>
      )}
    </div>
  );
}
