import type { KbPassagesRepository, PassageHit } from "../../store/repositories/kb-passages.ts";
import { fuseRankings } from "./rank-fusion.ts";

/** The two searches a retrieval runs (KbPassagesRepository has them). */
export type PassageSearch = Pick<KbPassagesRepository, "searchByVector" | "searchByText">;

/** What to look for, and where. */
export interface RetrieveRequest {
  /** The knowledge bases to search; no other base's passage ever comes back. */
  kbIds: readonly string[];
  /** The question's embedding (bge-m3); empty to search by words only. */
  queryVector: ArrayLike<number>;
  question: string;
  /** How many passages the caller will keep in the end. */
  topK: number;
  /** How many each search finds, and at most how many come back; max(20, 3 x topK) when not given. */
  candidates?: number;
}

/** A passage found for a question, ranked by both searches together. */
export interface RetrievedPassage extends PassageHit {
  /** The fused score (reciprocal rank fusion): higher is better, comparable within one retrieval only. */
  score: number;
  /** Its place (1 = first) among the vector search's hits, null when that search did not find it. */
  vectorRank: number | null;
  /** Its place among the full-text search's hits, null when that search did not find it. */
  textRank: number | null;
  /** Its cosine similarity to the question, when the vector search found it. */
  similarity: number | null;
}

/**
 * The passages that best answer a question: the nearest by embedding and the best matches of its
 * words, merged by reciprocal rank fusion, each passage once, best first. The caller may rerank
 * them and keep its top k; more candidates than that are returned so that a reranker has a choice.
 */
export async function retrievePassages(
  passages: PassageSearch,
  request: RetrieveRequest,
): Promise<RetrievedPassage[]> {
  const candidates = Math.max(1, Math.floor(request.candidates ?? Math.max(20, request.topK * 3)));
  if (request.kbIds.length === 0) return [];
  const [byVector, byText] = await Promise.all([
    request.queryVector.length === 0
      ? Promise.resolve([])
      : passages.searchByVector(request.kbIds, request.queryVector, candidates),
    passages.searchByText(request.kbIds, request.question, candidates),
  ]);
  const similarities = new Map(byVector.map((hit) => [hit.id, hit.score]));
  return fuseRankings([byVector, byText], (hit) => hit.id, { limit: candidates }).map(
    ({ item, score, ranks: [vectorRank = null, textRank = null] }) => ({
      ...item,
      score,
      vectorRank,
      textRank,
      similarity: similarities.get(item.id) ?? null,
    }),
  );
}
