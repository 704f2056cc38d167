import type { FastifyInstance } from "fastify";

/** The whole request may be up to 64 MB (65,536 KiB); above that the answer is 413. */
export const BODY_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Body parsing: a body that is not valid JSON is read as empty, a body
 * without a JSON content type is read as a form, and multipart uploads are left as streams for
 * the route that takes them. None of these can produce a 500.
 */
export function installBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) =>
    done(null, parseJsonOrEmpty(body as string)),
  );
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string" },
    (_request, body, done) => done(null, parseForm(body as string)),
  );
  // The route reads the multipart stream itself, with its own limits.
  app.addContentTypeParser("multipart/form-data", (_request, _payload, done) => done(null));
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => done(null, {}));
}

function parseJsonOrEmpty(text: string): unknown {
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** Reads a URL-encoded form; `name[]` fields collect into arrays. */
export function parseForm(text: string): Record<string, string | string[]> {
  const form: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(text)) {
    if (name.endsWith("[]")) {
      const key = name.slice(0, -2);
      const list = form[key];
      form[key] = Array.isArray(list) ? [...list, value] : [value];
    } else {
      form[name] = value;
    }
  }
  return form;
}
