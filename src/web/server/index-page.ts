import type { WebBuild } from "./web-build.ts";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ESCAPES[c] ?? c);
}

/**
 * The one HTML page of the web chat, for every address of it: the front end reads the address and
 * shows the screen. `lang` is the installation's language (the page's language before sign-in),
 * the name its title. No inline script or style: the CSP allows neither.
 */
export function indexPage(build: WebBuild, installation: { name: string; language: string }): string {
  const name = escapeHtml(installation.name);
  return `<!DOCTYPE html>
<html lang="${escapeHtml(installation.language)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, interactive-widget=resizes-content">
<meta name="color-scheme" content="light dark">
<meta name="application-name" content="${name}">
<title>${name}</title>
<link rel="icon" href="/assets/${build.icon}" type="image/svg+xml">
<link rel="stylesheet" href="/assets/${build.style}">
<script type="module" src="/assets/${build.script}"></script>
${build.preload.map((chunk) => `<link rel="modulepreload" href="/assets/${chunk}">`).join("\n")}
</head>
<body>
<div id="app"></div>
<noscript>${name} needs JavaScript.</noscript>
</body>
</html>
`;
}

/** What a browser gets when the web chat could not be built: a plain page, status 503. */
export function unavailablePage(): string {
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Web chat unavailable</title></head>
<body><h1>Web chat unavailable</h1><p>The web chat could not be built. The operator finds the reason in the log.</p></body>
</html>
`;
}
