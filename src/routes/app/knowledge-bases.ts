import type { FastifyInstance, FastifyRequest } from "fastify";
import { validationFailed } from "../../errors/catalogue.ts";
import { documentTooLarge } from "../../errors/knowledge-errors.ts";
import { openEventStream } from "../../http/event-stream-response.ts";
import { isMultipart, receiveMultipart } from "../../http/multipart-upload.ts";
import { userLimit } from "../../limits/user-limits.ts";
import type { Services } from "../../services/create-services.ts";
import { validateNewBase, validateQuestion } from "../wire/validate-kb.ts";
import { requireUser } from "./app-user.ts";
import { sendKbEvents } from "./kb-event-stream.ts";
import { userContext } from "./user-context.ts";

/** The largest document: 50 MB. */
export const DOCUMENT_MAX_BYTES = 50 * 1024 * 1024;

type WithSlug = { Params: { slug: string } };
type WithDocument = { Params: { slug: string; id: string } };

/**
 * Knowledge bases of the app API (`/rag/kb...`): the signed-in user's bases (create, list, read,
 * delete), their documents (upload as multipart `file`, list with their state, delete), and
 * questions answered as server-sent events with their sources. A base that is missing or another
 * account's private one is 404 `{message}`. Payloads: docs/knowledge-bases.md.
 */
export async function knowledgeBaseRoutes(app: FastifyInstance, options: { services: Services }) {
  const { services } = options;
  const accountOf = (request: FastifyRequest) => requireUser(request).id;

  app.get("/rag/kb", async (request) => ({ data: await services.knowledgeBases.list(accountOf(request)) }));

  app.post("/rag/kb", { config: userLimit("createKnowledgeBase") }, async (request, reply) => {
    const fields = validateNewBase(request.body);
    return reply.code(201).send(await services.knowledgeBases.create(accountOf(request), fields));
  });

  app.get<WithSlug>("/rag/kb/:slug", (request) =>
    services.knowledgeBases.detail(accountOf(request), request.params.slug),
  );

  app.delete<WithSlug>("/rag/kb/:slug", async (request, reply) => {
    await services.knowledgeBases.delete(accountOf(request), request.params.slug);
    return reply.code(204).send();
  });

  app.get<WithSlug>("/rag/kb/:slug/docs", async (request) => ({
    data: await services.knowledgeBases.documents(accountOf(request), request.params.slug),
  }));

  app.post<WithSlug>(
    "/rag/kb/:slug/docs",
    { config: userLimit("knowledgeBaseDocs") },
    async (request, reply) => {
      const account = accountOf(request);
      // The base first: a missing one is 404 whatever was sent.
      await services.knowledgeBases.owned(account, request.params.slug);
      if (!isMultipart(request)) {
        throw validationFailed({ file: ["Send the document as multipart/form-data in 'file'."] });
      }
      // One byte more than allowed is kept: busboy marks a file truncated once it reaches its limit,
      // so a limit of exactly 50 MB would refuse a file of exactly 50 MB.
      const upload = await receiveMultipart(request, {
        fileField: "file",
        maxFileBytes: DOCUMENT_MAX_BYTES + 1,
      });
      try {
        const file = upload.file;
        // A form sent with no file chosen (a nameless empty part) has none; a named empty file is a
        // document, refused with its reason (400 unsupported_document "The file is empty.").
        if (file === undefined) throw validationFailed({ file: ["The file field is required."] });
        if (file.truncated || file.size > DOCUMENT_MAX_BYTES) throw documentTooLarge();
        const document = await services.knowledgeBases.upload(account, request.params.slug, {
          path: file.path,
          size: file.size,
          filename: cleanName(file.filename),
        });
        return reply.code(202).send(document);
      } finally {
        await upload.remove();
      }
    },
  );

  app.delete<WithDocument>("/rag/kb/:slug/docs/:id", async (request, reply) => {
    await services.knowledgeBases.deleteDocument(accountOf(request), request.params.slug, request.params.id);
    return reply.code(204).send();
  });

  app.post<WithSlug>(
    "/rag/kb/:slug/chat",
    { config: userLimit("knowledgeBaseChat") },
    async (request, reply) => {
      const started = performance.now();
      const base = await services.knowledgeBases.readable(accountOf(request), request.params.slug);
      const question = validateQuestion(request.body);
      const context = userContext(request, reply, "knowledge_bases.chat");
      const prepared = await services.kbAsk.prepare(base, question, context);
      const placed = await services.kbAsk.stream(prepared, context);
      const response = openEventStream(reply, placed.zone);
      await sendKbEvents(request, response, prepared.sources, placed.result, started);
      return reply;
    },
  );
}

/** The file's own name without folders, at most 255 characters; "" when it has none (the upload names it). */
function cleanName(name: string): string {
  const base = name.split(/[\\/]/).pop()?.trim() ?? "";
  const chars = [...base].filter((char) => char >= " " && char !== "\u007f");
  return chars.slice(0, 255).join("");
}
