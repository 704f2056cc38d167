import type { FastifyInstance, FastifyRequest } from "fastify";
import { type ApiError, invalidRequest, validationFailed } from "../errors/catalogue.ts";
import { type Surface, surfaceOf } from "./surface.ts";
import { findUnstorable, shownName, type UnstorableText, unstorableCharacter } from "./unstorable-text.ts";

/**
 * PostgreSQL cannot store NUL or a lone surrogate, so a request string holding one that reached
 * it was a 500. Every string a request to the three APIs carries is checked once, before any route
 * reads it: the query and the parsed body here (preValidation runs after authentication and the
 * limits, before the handler), multipart text fields when they are read (receiveMultipart).
 */
export function installUnstorableTextGuard(app: FastifyInstance): void {
  app.addHook("preValidation", (request, _reply, done) => {
    const surface = surfaceOf(request.url);
    if (surface === "other") return done();
    const found = findUnstorable(request.query) ?? findUnstorable(request.body);
    done(found ? unstorableText(surface, found) : undefined);
  });
}

/** Refuses a multipart form with a text field whose name or value cannot be stored. */
export function refuseUnstorableFields(
  request: FastifyRequest,
  fields: ReadonlyMap<string, readonly string[]>,
): void {
  for (const [name, values] of fields) {
    for (const text of [name, ...values]) {
      const character = unstorableCharacter(text);
      if (character) throw unstorableText(surfaceOf(request.url), { field: shownName(name), character });
    }
  }
}

/** 400 naming the field on the key and operator APIs, 422 `validation_error` on the app API. */
function unstorableText(surface: Surface, found: UnstorableText): ApiError {
  const what =
    found.character === "nul"
      ? "a NUL character (U+0000)"
      : "an unpaired UTF-16 surrogate (half of a character such as an emoji)";
  const reason = `holds ${what}, which cannot be stored. Remove it and send the request again.`;
  if (surface === "app") return validationFailed({ [found.field]: [`The ${found.field} field ${reason}`] });
  // The operator API names a field with a wrong value without a code (docs/admin-api.md "Errors").
  const code = surface === "admin" ? {} : { code: "invalid_value" };
  return invalidRequest(`'${found.field}' ${reason}`, { param: found.field, ...code });
}
