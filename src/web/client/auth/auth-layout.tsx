import type { ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";
import { setLanguage } from "../i18n/i18n.ts";
import { installationName } from "../ui/installation.ts";
import { LanguagePicker } from "../ui/language-picker.tsx";

/** The frame of the screens before sign-in: the installation's name, a card, the language picker. */
export function AuthLayout(props: { title: string; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · ${installationName()}`;
  }, [props.title]);
  return (
    <main class="auth-page" id="main">
      <div class="auth-card">
        <p class="brand">{installationName()}</p>
        <h1>{props.title}</h1>
        {props.children}
      </div>
      <LanguagePicker onPick={setLanguage} />
    </main>
  );
}
