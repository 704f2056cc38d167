import DOMPurify from "dompurify";
import { Marked } from "marked";
import { escapeHtml, highlightCode } from "./highlight.ts";

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const { html, language } = highlightCode(text, lang);
      const label = language ? ` data-language="${escapeHtml(language)}"` : "";
      return `<pre${label}><code class="hljs">${html}</code></pre>\n`;
    },
  },
});

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
 * An answer's Markdown as safe HTML: rendered by marked (tables, lists, code), then sanitized by
 * DOMPurify, so an answer that contains `<script>` or `<img onerror>` runs nothing. Only the
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
