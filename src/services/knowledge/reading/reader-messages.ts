import type { DocumentLimits } from "../documents/document-limits.ts";
import type { DocumentProblem } from "../documents/document-unreadable.ts";
import type { DocumentFormat } from "../documents/extracted-document.ts";

/** What the reading process is asked: read the file at `path`, write its passages to `passagesPath`. */
export interface ReadRequest {
  path: string;
  filename: string;
  passagesPath: string;
  limits: DocumentLimits;
}

/** What the reading process answers: the document's facts, or why it cannot be read. */
export type ReadAnswer =
  | { ok: true; format: DocumentFormat; pages?: number; passages: number }
  | { ok: false; problem: DocumentProblem; reason: string };
