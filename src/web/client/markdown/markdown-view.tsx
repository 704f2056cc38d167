import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { t } from "../i18n/i18n.ts";
import { highlighterReady, loadHighlighter, renderMarkdown } from "./render-markdown.ts";

/** An answer shown as Markdown, sanitized, with a copy button on every code block. */
export function MarkdownView(props: { source: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const [colours, setColours] = useState(highlighterReady());
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    element.innerHTML = renderMarkdown(props.source);
    const blocks = element.querySelectorAll("pre");
    for (const pre of blocks) addCopyButton(pre);
    // The first code block fetches highlight.js, then the answer is drawn again in colour.
    if (blocks.length > 0 && !colours) {
      void loadHighlighter().then(
        () => setColours(true),
        () => {},
      );
    }
  }, [props.source, colours]);
  return <div class="markdown" ref={ref} />;
}

function addCopyButton(pre: HTMLPreElement): void {
  const bar = document.createElement("div");
  bar.className = "code-bar";
  const label = document.createElement("span");
  label.textContent = pre.dataset.language ?? "";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy-code";
  button.textContent = t("chat.copy");
  button.addEventListener("click", () => {
    const code = pre.querySelector("code")?.textContent ?? "";
    void copyText(code).then(() => {
      button.textContent = t("chat.copied");
      setTimeout(() => {
        button.textContent = t("chat.copy");
      }, 1500);
    });
  });
  bar.append(label, button);
  pre.before(bar);
}

/** Puts text on the clipboard; falls back to a selection where the Clipboard API is refused (plain http). */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}
