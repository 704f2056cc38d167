import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalidRequest, serverError, unknownParameter } from "../../errors/catalogue.ts";
import { isMultipart, receiveMultipart } from "../../http/multipart-upload.ts";
import { endpointLimit } from "../../limits/endpoint-limits.ts";
import type { Services } from "../../services/services.ts";
import { isVideoId } from "../../services/videos/video-ids.ts";
import type { VideoOwner } from "../../services/videos/video-service.ts";
import { generationContext } from "./text-context.ts";
import { type VideoFields, validateVideoRequest, videoPromptTooLong } from "./wire/validate-video-request.ts";

// A form carries a few short fields; the prompt is the longest (2,000 characters, up to 8 KB of UTF-8).
const FORM_LIMITS = {
  fileField: "input_reference",
  maxFileBytes: 1,
  maxFields: 16,
  maxFieldBytes: 16 * 1024,
};
/** What a form's file part (other than `input_reference`) stands for among the fields. */
const FILE_PART = { file: true } as const;
const LIST_FIELDS = new Set(["after", "limit", "order"]);
const CONTENT_FIELDS = new Set(["variant"]);
const MAX_PAGE = 100;
const DEFAULT_PAGE = 20;

/**
 * The video jobs of the key API (docs/videos-api.md), in the shape of OpenAI's Videos API:
 * `POST /v1/videos` (JSON or a multipart form, as the official SDKs send it), `GET /v1/videos`,
 * `GET /v1/videos/{id}`, `GET /v1/videos/{id}/content` and `DELETE /v1/videos/{id}`, each with its
 * own endpoint counter. The person is the key's account.
 */
export async function videoRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  app.post("/videos", { config: endpointLimit("videoCreate") }, async (request, reply) => {
    const fields = await requestFields(request);
    const valid = validateVideoRequest(fields);
    const { context } = generationContext(request, reply, "videos");
    const video = await services.videos.create(valid, {
      requestId: context.requestId,
      owner: ownerOf(request),
      tier: context.tier,
      signal: context.signal,
      ...(context.trace ? { trace: context.trace } : {}),
    });
    return reply.send(video);
  });

  app.get("/videos", { config: endpointLimit("videoList") }, async (request, reply) => {
    const query = queryOf(request, LIST_FIELDS);
    const page = {
      limit: pageLimit(query.limit),
      order: pageOrder(query.order),
      ...(query.after !== undefined && query.after !== "" ? { after: pageCursor(query.after) } : {}),
    };
    return reply.send(await services.videos.list(ownerOf(request), page));
  });

  app.get<{ Params: { id: string } }>(
    "/videos/:id",
    { config: endpointLimit("videoRetrieve") },
    async (request, reply) => reply.send(await services.videos.get(ownerOf(request), request.params.id)),
  );

  app.get<{ Params: { id: string } }>(
    "/videos/:id/content",
    { config: endpointLimit("videoContent") },
    async (request, reply) => {
      const variant = queryOf(request, CONTENT_FIELDS).variant ?? "video";
      if (variant !== "video") {
        throw invalidRequest("Only the video itself can be downloaded: 'variant' must be video.", {
          param: "variant",
          code: "invalid_value",
        });
      }
      const content = await services.videos.content(ownerOf(request), request.params.id);
      return reply
        .type("video/mp4")
        .header("content-disposition", `attachment; filename="${request.params.id}.mp4"`)
        .header("cache-control", `private, max-age=${content.secondsLeft}`)
        .send(content.mp4);
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/videos/:id",
    { config: endpointLimit("videoDelete") },
    async (request, reply) => reply.send(await services.videos.delete(ownerOf(request), request.params.id)),
  );
}

/** The key's account is the person: every key of it sees its videos, and its one job at a time. */
function ownerOf(request: FastifyRequest): VideoOwner {
  const principal = request.principal;
  if (!principal) throw serverError();
  return { person: `account:${principal.accountId}`, payer: principal };
}

/** The fields of a JSON body or of a multipart form (each form field a string, or a list when repeated). */
async function requestFields(request: FastifyRequest): Promise<VideoFields> {
  if (!isMultipart(request)) {
    const body = request.body;
    if (Array.isArray(body)) throw invalidRequest("The request body must be a JSON object.");
    return typeof body === "object" && body !== null ? (body as VideoFields) : {};
  }
  const upload = await receiveMultipart(request, FORM_LIMITS);
  try {
    const fields: VideoFields = {};
    for (const [name, values] of upload.fields) fields[name] = values.length === 1 ? values[0] : values;
    if (upload.file) fields.input_reference = "(a file)";
    // A file part is no text: a known field sent as a file is refused as not a string (never read as
    // the text "(a file)"), and one sent both as text and as a file is a repeated field.
    for (const name of upload.otherFiles) {
      const given = fields[name];
      fields[name] = given === undefined ? FILE_PART : [given, FILE_PART].flat();
    }
    // A field cut at 16 KB: a prompt that long is over 2,000 characters; any other is no field of ours.
    const cut = [...upload.tooLong][0];
    if (cut !== undefined) throw cut === "prompt" ? videoPromptTooLong() : unknownParameter(cut);
    return fields;
  } finally {
    await upload.remove();
  }
}

/** The query's fields, every one known and given once. */
function queryOf(request: FastifyRequest, known: ReadonlySet<string>): Record<string, string | undefined> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const fields: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(query)) {
    if (!known.has(name)) throw unknownParameter(name);
    if (typeof value !== "string") {
      throw invalidRequest(`'${name}' was given more than once.`, { param: name, code: "invalid_value" });
    }
    fields[name] = value;
  }
  return fields;
}

function pageLimit(value: string | undefined): number {
  if (value === undefined || value === "") return DEFAULT_PAGE;
  const limit = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw invalidRequest(`'limit' must be a whole number from 1 to ${MAX_PAGE}.`, {
      param: "limit",
      code: "invalid_value",
    });
  }
  return limit;
}

// A cursor is compared with stored ids, so it must be one: a NUL byte, for one, fails in PostgreSQL.
function pageCursor(value: string): string {
  if (isVideoId(value)) return value;
  throw invalidRequest("'after' must be the id of a video, such as the last_id of a page.", {
    param: "after",
    code: "invalid_value",
  });
}

function pageOrder(value: string | undefined): "asc" | "desc" {
  if (value === undefined || value === "" || value === "desc") return "desc";
  if (value === "asc") return "asc";
  throw invalidRequest("'order' must be asc or desc.", { param: "order", code: "invalid_value" });
}
