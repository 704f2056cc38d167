import { ApiError } from "./catalogue.ts";

/** 409: the base has no document ready to be asked yet (uploaded ones are still being read, or failed). */
export function knowledgeBaseNotReady(): ApiError {
  return new ApiError({
    status: 409,
    message: "This knowledge base has no ready document yet: wait until a document is ready, then ask again.",
    code: "knowledge_base_not_ready",
  });
}

/** 400: the uploaded file is no document Zona can read (PDF, DOCX, TXT, Markdown); `reason` says why. */
export function documentRefused(reason: string): ApiError {
  return new ApiError({ status: 400, message: reason, code: "unsupported_document", param: "file" });
}

/** 400: a document over 50 MB. */
export function documentTooLarge(): ApiError {
  return new ApiError({
    status: 400,
    message: "The document is larger than 50 MB, the most a knowledge base takes per file.",
    code: "file_too_large",
    param: "file",
  });
}
