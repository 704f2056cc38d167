import type { KbDocumentView, KbEvent, KnowledgeBaseView } from "../../../contract/app-api.ts";
import { api, apiFetch } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import { readEventStream } from "../api/sse-reader.ts";
import { type TextKey, t } from "../i18n/i18n.ts";
import { errorText } from "../ui/error-text.ts";

/** Limits of the app API: a question of at most 2,000 characters, a document of at most 50 MB. */
export const QUESTION_MAX_CHARACTERS = 2000;
export const DOCUMENT_MAX_BYTES = 50 * 1024 * 1024;
/** What the file picker offers; the app API judges a file by its content, not by its name. */
export const ACCEPTED_FILES = [
  ".pdf",
  ".docx",
  ".txt",
  ".md",
  ".markdown",
  "application/pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "text/plain",
  "text/markdown",
].join(",");

const path = (slug: string) => `/rag/kb/${encodeURIComponent(slug)}`;

export async function listBases(): Promise<KnowledgeBaseView[]> {
  return (await api<{ data: KnowledgeBaseView[] }>("GET", "/rag/kb")).data;
}

export function createBase(fields: { name: string; description?: string }): Promise<KnowledgeBaseView> {
  return api<KnowledgeBaseView>("POST", "/rag/kb", fields);
}

export function deleteBase(slug: string): Promise<void> {
  return api<void>("DELETE", path(slug));
}

export function readBase(slug: string): Promise<KnowledgeBaseView & { documents_list: KbDocumentView[] }> {
  return api("GET", path(slug));
}

export async function listDocuments(slug: string): Promise<KbDocumentView[]> {
  return (await api<{ data: KbDocumentView[] }>("GET", `${path(slug)}/docs`)).data;
}

export function deleteDocument(slug: string, id: string): Promise<void> {
  return api<void>("DELETE", `${path(slug)}/docs/${encodeURIComponent(id)}`);
}

/** The upload address of a base (sent by upload.ts with XMLHttpRequest, for its progress). */
export function documentsPath(slug: string): string {
  return `${path(slug)}/docs`;
}

/** Asks a base; each event of the answer stream goes to `onEvent`. Errors before the stream throw ApiError. */
export async function ask(
  slug: string,
  question: string,
  onEvent: (event: KbEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await apiFetch(
    `${path(slug)}/chat`,
    {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question }),
    },
    { signal },
  );
  await readEventStream<KbEvent>(response, onEvent);
}

const KNOWN_CODES: Record<string, TextKey> = {
  knowledge_base_not_ready: "kb.error.notReady",
  upstream_error: "kb.error.upstream",
  model_unavailable: "kb.error.unavailable",
  zone_unavailable: "kb.error.unavailable",
  file_too_large: "kb.upload.tooLarge",
  not_found: "kb.notFound",
};

/** What to tell the user about a failed knowledge-base call, in the interface language. */
export function kbErrorText(error: unknown): string {
  const code = error instanceof ApiError ? error.code : typeof error === "string" ? error : undefined;
  const key = code === undefined ? undefined : KNOWN_CODES[code];
  if (key) return t(key);
  if (error instanceof ApiError && (error.status === 502 || error.status === 503))
    return t("kb.error.unavailable");
  return errorText(error);
}

/** A size in bytes as people read it (KB, MB). */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.max(1, Math.round(bytes / 1024))} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
