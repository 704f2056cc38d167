import DOMPurify from "dompurify";
import { Marked } from "marked";
import { escapeHtml } from "./escape-html.ts";

type Highlighter = typeof import("./highlight.ts");
let highlighter: Highlighter | undefined;
let loadingHighlighter: Promise<void> | undefined;

/** Whether code blocks can be coloured now; `loadHighlighter()` makes it so. */
export function highlighterReady(): boolean {
  return highlighter !== undefined;
}

/** Loads highlight.js, a file of its own fetched by the first answer with a code block. */
export function loadHighlighter(): Promise<void> {
  loadingHighlighter ??= import("./highlight.ts").then(
    (loaded) => {
      highlighter = loaded;
    },
    (error: unknown) => {
      loadingHighlighter = undefined;
      throw error;
    },
  );
  return loadingHighlighter;
}

function codeHtml(text: string, lang: string | undefined): { html: string; language: string | undefined } {
  if (highlighter) return highlighter.highlightCode(text, lang);
  const language = lang?.trim().toLowerCase().split(/\s/)[0];
  return { html: escapeHtml(text), language: language || undefined };
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const { html, language } = codeHtml(text, lang);
      const label = language ? ` data-language="${escapeHtml(language)}"` : "";
      return `<pre${label}><code class="hljs">${html}</code></pre>\n`;
    },
    // HTML the model wrote is shown as text: Chromium reports a CSP violation as soon as an
    // `onerror` or `style` attribute is parsed, even into DOMPurify's inert document, so such
    // markup must never reach a parser. Only a few bare formatting tags stay tags.
    html({ text, block }) {
      const shown = keepBareTags(escapeHtml(text));
      return block ? `<p>${shown.trim().replace(/\n/g, "<br>")}</p>\n` : shown;
    },
  },
});

// Tags without attributes that answers use for formatting (a `<br>` in a table cell, `<sup>`).
const BARE_TAG = /&lt;(\/?)(br|sup|sub|kbd|b|i|u|em|strong|s|del|ins|mark|small)\s*\/?&gt;/gi;

function keepBareTags(escaped: string): string {
  return escaped.replace(BARE_TAG, (_, close: string, tag: string) =>
    tag.toLowerCase() === "br" ? "<br>" : `<${close}${tag.toLowerCase()}>`,
  );
}

// What model output may never carry, whatever the Markdown says: no script, no forms, no frames,
// no styles (the CSP would refuse them anyway), no event handlers (DOMPurify removes those).
const FORBID_TAGS = [
  "style",
  "form",
  "input",
  "button",
  "textarea",
  "select",
  "iframe",
  "object",
  "embed",
  "svg",
  "math",
];
const FORBID_ATTR = ["style", "id", "srcset"];

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  // Pictures only from inside the answer: a link elsewhere would tell another host who reads it.
  if (node.tagName === "IMG" && !/^data:image\/(png|jpeg|gif|webp);/i.test(node.getAttribute("src") ?? "")) {
    node.remove();
  }
});

/**
 * An answer's Markdown as safe HTML: rendered by marked (tables, lists, code) with the model's own
 * HTML shown as text, then sanitized by DOMPurify (links and pictures of Markdown syntax), so an
 * answer that contains `<script>` or `<img onerror>` runs nothing and trips no CSP rule. Only the
 * classes highlight.js put on code survive.
 */
export function renderMarkdown(source: string): string {
  const html = marked.parse(source, { async: false });
  const clean = DOMPurify.sanitize(html, {
    FORBID_TAGS,
    FORBID_ATTR,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|data:image\/(?:png|jpeg|gif|webp);|#|\/)/i,
  });
  return keepHighlightClassesOnly(clean);
}

// highlight.js marks tokens with classes such as `hljs-keyword` or `hljs-title function_`; any
// other class (one the model wrote) is dropped, so an answer cannot borrow the page's styles.
const HIGHLIGHT_CLASS = /^(?:hljs(?:-[\w-]+)?|[a-z]+_+)$/;

function keepHighlightClassesOnly(html: string): string {
  const template = document.createElement("template");
  template.innerHTML = html;
  for (const element of template.content.querySelectorAll("[class]")) {
    const tokens = (element.getAttribute("class") ?? "").split(/\s+/).filter(Boolean);
    const fromHighlighter =
      element.closest("pre") !== null && tokens.every((token) => HIGHLIGHT_CLASS.test(token));
    if (!fromHighlighter) element.removeAttribute("class");
  }
  return template.innerHTML;
}
