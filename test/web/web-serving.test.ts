import { randomUUID } from "node:crypto";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

const PAGES = ["/", "/sign-in", "/verify-email?token=x", `/c/${randomUUID()}`, "/kb/x"];
const YEAR = "public, max-age=31536000, immutable";

/** The hashed files a page links: its script and its style sheet. */
function linkedAssets(html: string): { script: string; style: string } {
  const script = /<script type="module" src="(\/assets\/app-[^"]+\.js)"><\/script>/.exec(html)?.[1];
  const style = /<link rel="stylesheet" href="(\/assets\/app-[^"]+\.css)">/.exec(html)?.[1];
  if (!script || !style) throw new Error("the page links no hashed script or style sheet");
  return { script, style };
}

/** Fetches without decompressing, so the encoding on the wire can be checked. */
async function raw(
  t: TestApp,
  path: string,
  encoding: string,
): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const answer = await request(`${t.url}${path}`, { headers: { "accept-encoding": encoding } });
  const body = Buffer.from(await answer.body.arrayBuffer());
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return { status: answer.statusCode, headers, body };
}

describe("the web chat is served at / with a strict CSP, hashed cached files, and the API left as it was", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { installation: { name: "Zona <Test>", language: "de" } } });
  });
  afterAll(() => t?.close());

  it("every screen's address answers the one page: 200 text/html, CSP without 'unsafe-inline', no-referrer, nosniff, no-cache", async () => {
    for (const path of PAGES) {
      const response = await t.fetch(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type"), path).toMatch(/^text\/html; charset=utf-8/);
      const csp = response.headers.get("content-security-policy") ?? "";
      expect(csp, path).not.toContain("unsafe-inline");
      expect(csp, path).not.toContain("unsafe-eval");
      expect(csp, path).toMatch(/(^|;\s*)script-src 'self'(;|$)/);
      expect(csp, path).toMatch(/(^|;\s*)style-src 'self'(;|$)/);
      expect(csp, path).toMatch(/(^|;\s*)default-src 'none'(;|$)/);
      expect(csp, path).toMatch(/(^|;\s*)frame-ancestors 'none'(;|$)/);
      expect(response.headers.get("referrer-policy"), path).toBe("no-referrer");
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(response.headers.get("cache-control"), path).toBe("no-cache");
      const html = await response.text();
      expect(html, path).toMatch(/^<!DOCTYPE html>/);
    }
  });

  it("the page has no inline script or style, the installation's language and its escaped name", async () => {
    const html = await (await t.fetch("/")).text();
    // Every <script> has a src and no body; no <style> element, no style="" attribute, no on*="" handler.
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBe(1);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\bsrc="\/assets\//);
      expect(body).toBe("");
    }
    expect(html).not.toMatch(/<style\b/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).toMatch(/<html lang="de">/);
    expect(html).toContain("<title>Zona &lt;Test&gt;</title>");
    expect(html).not.toContain("Zona <Test>");
  });

  it("the hashed script and style sheet: 200, cached for a year, brotli or gzip when accepted, the same content decompressed", async () => {
    const html = await (await t.fetch("/")).text();
    const { script, style } = linkedAssets(html);
    for (const [path, type] of [
      [script, /^text\/javascript/],
      [style, /^text\/css/],
    ] as const) {
      const plain = await raw(t, path, "identity");
      expect(plain.status, path).toBe(200);
      expect(plain.headers.get("content-type"), path).toMatch(type);
      expect(plain.headers.get("cache-control"), path).toBe(YEAR);
      expect(plain.headers.get("content-encoding"), path).toBeNull();
      expect(plain.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(plain.body.length, path).toBeGreaterThan(100);

      const brotli = await raw(t, path, "gzip, deflate, br");
      expect(brotli.status).toBe(200);
      expect(brotli.headers.get("content-encoding")).toBe("br");
      expect(brotli.headers.get("cache-control")).toBe(YEAR);
      expect(brotli.headers.get("vary")).toMatch(/accept-encoding/i);
      expect(brotliDecompressSync(brotli.body).equals(plain.body)).toBe(true);
      expect(brotli.body.length).toBeLessThan(plain.body.length);

      const gzip = await raw(t, path, "gzip");
      expect(gzip.status).toBe(200);
      expect(gzip.headers.get("content-encoding")).toBe("gzip");
      expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true);

      // A coding refused with q=0 is not sent; neither is one never offered.
      const noBrotli = await raw(t, path, "br;q=0, gzip;q=0.8");
      expect(noBrotli.headers.get("content-encoding")).toBe("gzip");
      expect(gunzipSync(noBrotli.body).equals(plain.body)).toBe(true);
      const neither = await raw(t, path, "br;q=0, gzip;q=0, deflate");
      expect(neither.headers.get("content-encoding")).toBeNull();
      expect(neither.body.equals(plain.body)).toBe(true);
      const any = await raw(t, path, "*");
      expect(["br", "gzip"]).toContain(any.headers.get("content-encoding"));
    }
    // The page's own files are what the CSP allows: same origin, under /assets/.
    expect(html).toMatch(/<link rel="icon" href="\/assets\/icon-[0-9a-f]+\.svg"/);
    const icon = html.match(/href="(\/assets\/icon-[0-9a-f]+\.svg)"/)?.[1] ?? "";
    const iconResponse = await t.fetch(icon);
    expect(iconResponse.status).toBe(200);
    expect(iconResponse.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
  });

  it("an unknown file and an unknown page are 404 unknown_endpoint JSON, as before", async () => {
    for (const path of ["/assets/app-00000000.js", "/assets/nothing.css", "/nope", "/c", "/kb/x/y"]) {
      const response = await t.fetch(path);
      expect(response.status, path).toBe(404);
      expect(response.headers.get("content-type"), path).toMatch(/^application\/json/);
      const body = (await response.json()) as { error: { code: string } };
      expect(body.error.code, path).toBe("unknown_endpoint");
    }
  });

  it("HEAD / answers the page's headers without a body", async () => {
    const response = await t.fetch("/", { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(await response.text()).toBe("");
  });

  it("the API prefixes are untouched: /v1, /api/v1, /admin/v1 and /health still answer JSON", async () => {
    const models = await t.fetch("/v1/models");
    expect(models.status).toBe(401);
    expect(models.headers.get("content-type")).toMatch(/^application\/json/);
    expect(models.headers.get("content-security-policy")).toBeNull();
    const { key } = await t.newKey();
    const listed = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { object: string }).object).toBe("list");

    const me = await t.fetch("/api/v1/web/me");
    expect(me.status).toBe(401);
    expect(((await me.json()) as { error: { code: string } }).error.code).toBe("unauthorized");

    const unknownApi = await t.fetch("/api/v1/nothing-here");
    expect(unknownApi.status).toBe(404);
    expect(unknownApi.headers.get("content-type")).toMatch(/^application\/json/);

    const admin = await t.admin("GET", "/accounts?limit=1");
    expect(admin.status).toBe(200);
  });
});

describe("app.web_chat.enabled false leaves / to the operator", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { app: { web_chat: { enabled: false } } } });
  });
  afterAll(() => t?.close());

  it("/ and the screens are 404 unknown_endpoint, no assets are served, and the API still works", async () => {
    for (const path of ["/", "/sign-in", "/verify-email?token=x"]) {
      const response = await t.fetch(path);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("unknown_endpoint");
    }
    const assets = await t.fetch("/assets/app-00000000.js");
    expect(assets.status).toBe(404);

    const { key } = await t.newKey();
    const models = await t.fetch("/v1/models", { headers: { authorization: `Bearer ${key}` } });
    expect(models.status).toBe(200);
    const register = await t.fetch("/api/v1/auth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `off-${Date.now()}@example.com`, password: "correct horse battery" }),
    });
    expect(register.status).toBe(201);
    const login = (await register.json()) as { access_token: string };
    const me = await t.fetch("/api/v1/web/me", {
      headers: { authorization: `Bearer ${login.access_token}` },
    });
    expect(me.status).toBe(200);
  });
});
