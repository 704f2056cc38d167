import { invalidRequest } from "../../../errors/catalogue.ts";
import { fieldsOf, given, isObject } from "./validate-common.ts";

/** Rerank limits. */
export const MAX_RERANK_QUERY_CHARACTERS = 32_000;
export const MAX_RERANK_DOCUMENTS = 32;

/** A valid `POST /v1/rerank` body. */
export interface ValidRerank {
  query: string;
  documents: string[];
  /** How many results to answer (1 to the number of documents); all when not given. */
  topN: number;
  returnDocuments: boolean;
}

/**
 * Validates a `POST /v1/rerank` body: `query` (required, up to 32,000 characters), `documents`
 * (1 to 32 non-empty strings; Cohere-style `{text}` objects are read too), `top_n` (1 to the number
 * of documents), `return_documents` (boolean, default false). Each fault is a 400 naming the field;
 * every other field (`model` included) is ignored.
 */
export function validateRerank(body: unknown): ValidRerank {
  const fields = fieldsOf(body);
  const query = given(fields, "query");
  if (query === undefined || query === "") {
    throw invalidRequest("Missing required parameter: 'query'.", {
      param: "query",
      code: "missing_required_parameter",
    });
  }
  if (typeof query !== "string") throw refuse("query", "'query' must be a string.");
  if (query.length > MAX_RERANK_QUERY_CHARACTERS) {
    throw refuse("query", `'query' must be at most ${MAX_RERANK_QUERY_CHARACTERS} characters.`);
  }

  const list = given(fields, "documents");
  if (list === undefined) {
    throw invalidRequest("Missing required parameter: 'documents'.", {
      param: "documents",
      code: "missing_required_parameter",
    });
  }
  if (!Array.isArray(list) || list.length === 0)
    throw refuse("documents", "'documents' must be a list of 1 to 32 texts.");
  if (list.length > MAX_RERANK_DOCUMENTS) {
    throw refuse("documents", `'documents' may hold at most ${MAX_RERANK_DOCUMENTS} texts.`);
  }
  const documents: string[] = [];
  for (const [i, item] of list.entries()) {
    const text = typeof item === "string" ? item : isObject(item) ? item.text : undefined;
    if (typeof text !== "string")
      throw refuse("documents", `documents[${i}] must be a string or {"text": "..."}.`);
    if (text === "") throw refuse("documents", `documents[${i}] is empty; every document needs text.`);
    documents.push(text);
  }

  const topN = given(fields, "top_n");
  if (
    topN !== undefined &&
    (typeof topN !== "number" || !Number.isInteger(topN) || topN < 1 || topN > documents.length)
  ) {
    throw refuse(
      "top_n",
      `'top_n' must be a whole number from 1 to the number of documents (${documents.length}).`,
    );
  }
  const returnDocuments = given(fields, "return_documents");
  if (returnDocuments !== undefined && typeof returnDocuments !== "boolean") {
    throw refuse("return_documents", "'return_documents' must be true or false.");
  }
  return {
    query,
    documents,
    topN: (topN as number | undefined) ?? documents.length,
    returnDocuments: returnDocuments === true,
  };
}

function refuse(param: string, message: string) {
  return invalidRequest(message, { param, code: "invalid_value" });
}
