import type { KbSource } from "../../contract/app-api.ts";
import type { ChatMessage } from "../../engines/types.ts";

/** A passage chosen to answer a question, with where it comes from. */
export interface ChosenPassage {
  documentId: string;
  document: string;
  page: number | null;
  heading: string | null;
  text: string;
  /** Its relevance as ranked (the reranker's score when one ranked it, else the fused rank's). */
  score: number;
}

// Why a fixed English instruction: the model answers in the question's language anyway, and a
// translated instruction per installation language would only be more to keep right.
const INSTRUCTIONS = [
  "You answer questions using only the numbered passages of a knowledge base given below.",
  "Cite the passages you use with their numbers in square brackets, such as [1] or [2][3].",
  "If the passages do not contain the answer, say that the knowledge base does not say, and do not invent one.",
  "Answer in the language of the question.",
].join(" ");

/** The chat messages that ask the model: the instructions with the passages, then the question. */
export function askMessages(question: string, passages: readonly ChosenPassage[]): ChatMessage[] {
  const numbered = passages
    .map((passage, index) => `[${index + 1}] ${placeOf(passage)}\n${passage.text}`)
    .join("\n\n");
  return [
    { role: "system", content: `${INSTRUCTIONS}\n\nPassages:\n\n${numbered}` },
    { role: "user", content: question },
  ];
}

/** The sources of an answer, numbered as in the messages. */
export function sourcesOf(passages: readonly ChosenPassage[]): KbSource[] {
  return passages.map((passage, index) => ({
    index: index + 1,
    document: passage.document,
    document_id: passage.documentId,
    page: passage.page,
    section: passage.heading,
    passage: passage.text,
    score: Math.round(passage.score * 10_000) / 10_000,
  }));
}

function placeOf(passage: ChosenPassage): string {
  const where = [
    passage.document,
    passage.page !== null ? `page ${passage.page}` : undefined,
    passage.heading ?? undefined,
  ].filter((part) => part !== undefined);
  return `(${where.join(", ")})`;
}
