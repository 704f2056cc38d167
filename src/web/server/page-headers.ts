/**
 * The Content-Security-Policy of the web chat: scripts and styles only from Zona's own files (no
 * inline script, no eval), answers only to Zona itself, no frames. `blob:` is for the audio read
 * aloud and `data:` for pictures a sanitized answer may carry inline.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers of every page and file of the web chat. */
export const PAGE_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  // The verification and reset pages carry a token in their address: it must not leave in a Referer.
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "permissions-policy": "microphone=(self), camera=(), geolocation=(), payment=()",
};
