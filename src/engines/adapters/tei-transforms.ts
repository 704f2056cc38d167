/**
 * Pure translations for text-embeddings-inference: `/embed` answers a bare array of vectors,
 * `/rerank` a bare array of `{index, score}`; neither reports tokens.
 */
import type { RerankScore } from "../types.ts";
import { UpstreamError } from "../types.ts";
import {
  expectPayload,
  isPayload,
  numberField,
  type Payload,
  throwIfErrorPayload,
  vectorField,
} from "./payload.ts";

/** The body of `POST /embed`: inputs longer than the model's window are cut rather than refused. */
export function teiEmbedRequest(texts: string[]): Payload {
  return { inputs: texts, truncate: true };
}

/** The vectors of an `/embed` answer; TEI counts no tokens, so the service estimates them. */
export function fromTeiEmbed(raw: unknown, count: number): { vectors: number[][]; promptTokens: null } {
  if (isPayload(raw)) throwIfErrorPayload(raw);
  if (!Array.isArray(raw) || raw.length !== count) {
    throw new UpstreamError("protocol", `the upstream did not send ${count} embeddings`);
  }
  return { vectors: raw.map((vector) => vectorField(vector, "an embedding")), promptTokens: null };
}

/**
 * The body of `POST /rerank`: scores through the sigmoid (0 to 1), and long pairs truncated
 * (a query may have 32,000 characters, more than the reranker's window).
 */
export function teiRerankRequest(query: string, documents: string[]): Payload {
  return { query, texts: documents, raw_scores: false, truncate: true };
}

/** The scores of a `/rerank` answer, in TEI's order (best first). */
export function fromTeiRerank(raw: unknown, count: number): RerankScore[] {
  if (isPayload(raw)) throwIfErrorPayload(raw);
  if (!Array.isArray(raw))
    throw new UpstreamError("protocol", "the upstream sent a rerank answer that is not a list");
  return raw.map((rawResult) => {
    const result = expectPayload(rawResult, "a rerank result");
    const index = numberField(result.index);
    const score = numberField(result.score);
    if (index === undefined || index < 0 || index >= count || score === undefined) {
      throw new UpstreamError("protocol", "the upstream sent a rerank result without index or score");
    }
    return { index, relevance_score: score };
  });
}
