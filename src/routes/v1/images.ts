import type { FastifyInstance, FastifyRequest } from "fastify";
import { addressLimit } from "../../limits/address-limits.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import { generationContext } from "./text-context.ts";
import { validateImageRequest } from "./wire/validate-image-request.ts";

/** `POST /v1/images/generations` (docs/images-api.md), behind the key and its limits. */
export async function imageRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post("/images/generations", { config: endpointLimit("imageGenerations") }, async (request, reply) => {
    const valid = validateImageRequest(request.body);
    const { context } = generationContext(request, reply, "images.generations");
    const outcome = await services.images.generate(valid, context);
    reply.header("x-zona", outcome.zone);
    const origin = originOf(request);
    const data = outcome.data.map((picture) =>
      "link" in picture ? { url: `${origin}${picture.link}` } : { b64_json: picture.b64_json },
    );
    return reply.send({ created: outcome.created, data });
  });
}

/**
 * `GET /v1/images/file/<id>.png?expires=&signature=`: no key (the signed query authorises it),
 * counted per client address. Registered outside the key API's authentication.
 */
export async function imageFileRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.get("/images/file/:file", { config: addressLimit("imageFile") }, async (request, reply) => {
    const served = await services.imageFiles.open(request.url);
    return reply
      .type("image/png")
      .header("cache-control", `private, max-age=${served.secondsLeft}`)
      .send(served.png);
  });
}

/**
 * The address clients reached this service at: the request's scheme and host, which Fastify takes
 * from `X-Forwarded-Proto` / `X-Forwarded-Host` when `server.trust_proxy` is on.
 */
function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}
