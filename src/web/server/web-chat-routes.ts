import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { unknownEndpoint } from "../../errors/catalogue.ts";
import type { Services } from "../../services/services.ts";
import { indexPage, unavailablePage } from "./index-page.ts";
import { PAGE_HEADERS } from "./page-headers.ts";
import { webAssets } from "./web-assets.ts";
import type { WebAsset, WebBuild } from "./web-build.ts";

/**
 * The addresses of the web chat's screens; each answers the same page. The mails link to
 * /verify-email and /reset-password (mail-texts.ts).
 */
export const WEB_PAGES = [
  "/",
  "/sign-in",
  "/register",
  "/verify-email",
  "/check-mail",
  "/forgot-password",
  "/reset-password",
  "/archived",
  "/settings",
  "/c/:id",
  "/kb",
  "/kb/:slug",
] as const;

const YEAR_SECONDS = 365 * 24 * 3600;

/**
 * Serves the web chat at / (docs/web-chat.md): its page for every screen, with a
 * strict CSP and never cached, and its files under /assets/ with hashed names, cached for a year,
 * sent compressed when the browser takes it. The front end talks to the app API only.
 */
export async function webChatRoutes(app: FastifyInstance, options: { services: Services }) {
  let build: WebBuild | undefined;
  try {
    build = await webAssets();
  } catch (error) {
    app.log.error({ err: error }, "the web chat could not be built; / answers 503");
  }
  const files = new Map<string, WebAsset>((build?.assets ?? []).map((asset) => [asset.name, asset]));
  const pages = new Map<string, string>();
  const page = (): string | undefined => {
    if (!build) return undefined;
    const { name, language } = options.services.config.installation;
    const key = `${language}\u0000${name}`;
    let html = pages.get(key);
    if (html === undefined) {
      html = indexPage(build, { name, language });
      pages.set(key, html);
    }
    return html;
  };

  for (const url of WEB_PAGES) {
    app.get(url, (_request, reply) => {
      const html = page();
      reply.headers(PAGE_HEADERS).header("cache-control", "no-cache");
      if (html === undefined) return reply.code(503).type("text/html; charset=utf-8").send(unavailablePage());
      return reply.type("text/html; charset=utf-8").send(html);
    });
  }

  app.get<{ Params: { name: string } }>("/assets/:name", (request, reply) => {
    const asset = files.get(request.params.name);
    if (!asset) throw unknownEndpoint(request.method, request.url.split("?", 1)[0] ?? "/");
    return sendAsset(request, reply, asset);
  });
}

function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: WebAsset): FastifyReply {
  reply
    .headers(PAGE_HEADERS)
    .header("cache-control", `public, max-age=${YEAR_SECONDS}, immutable`)
    .header("vary", "Accept-Encoding")
    .type(asset.type);
  const accepted = acceptedCodings(String(request.headers["accept-encoding"] ?? ""));
  if (accepted("br")) return reply.header("content-encoding", "br").send(asset.brotli);
  if (accepted("gzip")) return reply.header("content-encoding", "gzip").send(asset.gzip);
  return reply.send(asset.body);
}

/**
 * Whether an `Accept-Encoding` takes a coding (RFC 9110 §12.5.3): named, or covered by `*`, with a
 * weight above 0 (`br;q=0` refuses brotli).
 */
function acceptedCodings(header: string): (coding: string) => boolean {
  const weights = new Map<string, number>();
  for (const part of header.split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";");
    if (name === "") continue;
    const q = params.map((param) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(param)?.[1]).find(Boolean);
    weights.set(name.trim(), q === undefined ? 1 : Number(q));
  }
  return (coding) => (weights.get(coding) ?? weights.get("*") ?? 0) > 0;
}
