import { t } from "../i18n/i18n.ts";
import { FormField } from "./form-field.tsx";

/** The password a user chooses (register, reset): at least 8 characters, the browser may suggest one. */
export function NewPasswordField(props: {
  label: string;
  value: string;
  onValue: (value: string) => void;
  error: string | undefined;
}) {
  return (
    <FormField
      label={props.label}
      type="password"
      name="password"
      autocomplete="new-password"
      minLength={8}
      required
      hint={t("auth.passwordHint")}
      value={props.value}
      onValue={props.onValue}
      error={props.error}
    />
  );
}
