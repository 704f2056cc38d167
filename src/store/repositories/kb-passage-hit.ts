import { kbPassages } from "../schema.ts";

/** A passage found by a search: where it is, its text, and its score in that search. */
export interface PassageHit {
  id: string;
  documentId: string;
  kbId: string;
  text: string;
  page: number | null;
  heading: string | null;
  ordinal: number;
  /** Cosine similarity (-1 to 1) for a vector search; ts_rank_cd for a full-text search. */
  score: number;
}

/** The columns of a hit but its score, for Drizzle's select. */
export const HIT_COLUMNS = {
  id: kbPassages.id,
  documentId: kbPassages.documentId,
  kbId: kbPassages.kbId,
  text: kbPassages.text,
  page: kbPassages.page,
  heading: kbPassages.heading,
  ordinal: kbPassages.ordinal,
};
