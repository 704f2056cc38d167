/** What kind of trouble stopped a document from being read; the wording for the user is in `reason`. */
export type DocumentProblem =
  | "empty" // no bytes, or no text at all in a text file
  | "unsupported" // not a PDF, DOCX, TXT or Markdown file
  | "corrupt" // claims to be a PDF or DOCX but cannot be parsed
  | "encrypted" // password-protected
  | "no_text" // parsed, but holds no text (a scanned PDF)
  | "too_large" // over one of the caps in DocumentLimits
  | "too_demanding"; // its reading needed more memory or time than one document is given

/**
 * A document Zona cannot read. `reason` is shown to the user as it is, so it is written in plain
 * words, says what to do where that helps, and never quotes the document's content.
 */
export class DocumentUnreadable extends Error {
  override name = "DocumentUnreadable";
  readonly problem: DocumentProblem;
  readonly reason: string;

  constructor(problem: DocumentProblem, reason: string, options?: { cause?: unknown }) {
    super(reason, options);
    this.problem = problem;
    this.reason = reason;
  }
}
