import type { KbSource } from "../../contract/app-api.ts";
import type { Catalogue } from "../../engines/catalogue.ts";
import type { ChatCall, ChatChunk, TokenUsage } from "../../engines/types.ts";
import { isServiceFailure, modelNotFound } from "../../errors/catalogue.ts";
import { knowledgeBaseNotReady } from "../../errors/knowledge-errors.ts";
import type { KbPassagesRepository } from "../../store/repositories/kb-passages.ts";
import type { KnowledgeBaseRow, KnowledgeBasesRepository } from "../../store/repositories/knowledge-bases.ts";
import type { GenerationContext, Placed, TextGeneration } from "../text/text-generation.ts";
import { askMessages, type ChosenPassage, sourcesOf } from "./kb-prompt.ts";
import { retrievePassages } from "./retrieve-passages.ts";

/** A validated question to a knowledge base. */
export interface KbQuestion {
  question: string;
  /** Absent: the installation's knowledge model (`knowledgeModel`). */
  model?: string;
  topK: number;
}

/** A prepared question: the model's call and the sources it was given. */
export interface PreparedAsk {
  base: KnowledgeBaseRow;
  call: ChatCall;
  sources: KbSource[];
}

/** A whole answer (key API). */
export interface KbAnswer {
  base: KnowledgeBaseRow;
  model: string;
  answer: string;
  sources: KbSource[];
  usage: TokenUsage;
  zone: string;
}

/**
 * Asking a knowledge base, on both APIs (docs/knowledge-bases.md#how-a-question-is-answered): the
 * question is embedded (billed as an embedding, `knowledge_bases.embed`), the base's passages found
 * by vector similarity and full-text search merged, reranked by the catalogue's rerank model when a
 * machine serves it, the best `top_k` given to the chat model with the question, and the answer
 * returned or streamed with its sources. The answer is billed at the chat model's prices
 * (`knowledge_bases.ask`).
 */
export class KbAsk {
  private readonly passages: KbPassagesRepository;
  private readonly bases: KnowledgeBasesRepository;
  private readonly text: TextGeneration;
  private readonly catalogue: Catalogue;
  private readonly defaultModel: string | undefined;

  constructor(deps: {
    passages: KbPassagesRepository;
    bases: KnowledgeBasesRepository;
    text: TextGeneration;
    catalogue: Catalogue;
    /** The chat model asked when the question names none. */
    defaultModel: string | undefined;
  }) {
    this.passages = deps.passages;
    this.bases = deps.bases;
    this.text = deps.text;
    this.catalogue = deps.catalogue;
    this.defaultModel = deps.defaultModel;
  }

  /** Finds the passages and builds the model's call; 409 when the base has no ready document. */
  async prepare(
    base: KnowledgeBaseRow,
    question: KbQuestion,
    context: GenerationContext,
  ): Promise<PreparedAsk> {
    if (Number(base.readyDocuments) === 0) throw knowledgeBaseNotReady();
    const model = question.model ?? this.defaultModel ?? this.catalogue.firstOfKind("chat")?.id ?? "";
    // Before the question is embedded: a request refused with 404 must leave no usage.
    if (this.catalogue.find(model)?.kind !== "chat") throw modelNotFound(model);
    // And before it reaches any model: the answer's 402 (or 503 for a model not activated), for the
    // largest call the passages can make.
    await this.text.checkChat?.(
      { model, messages: askMessages(question.question, largestPassages(question.topK)), params: {} },
      { ...context, endpoint: "knowledge_bases.ask" },
    );
    // Each billed step has a usage record of its own (keyed by request id); the answer keeps the request's id.
    const embedded = await this.text.embed([question.question], {
      ...context,
      requestId: `${context.requestId}_embed`,
      endpoint: "knowledge_bases.embed",
    });
    const queryVector = embedded.result.vectors[0] ?? [];
    const hits = await retrievePassages(this.passages, {
      kbIds: [base.id],
      queryVector,
      question: question.question,
      topK: question.topK,
    });
    const ranked = await this.rerank(question.question, hits, context);
    const chosen = ranked.slice(0, question.topK);
    const documents = new Map((await this.bases.documents(base.id)).map((row) => [row.id, row.filename]));
    const passages: ChosenPassage[] = chosen.map((hit) => ({
      documentId: hit.documentId,
      document: documents.get(hit.documentId) ?? "",
      page: hit.page,
      heading: hit.heading,
      text: hit.text,
      score: hit.score,
    }));
    return {
      base,
      call: { model, messages: askMessages(question.question, passages), params: {} },
      sources: sourcesOf(passages),
    };
  }

  /** The whole answer (key API). */
  async answer(prepared: PreparedAsk, context: GenerationContext): Promise<KbAnswer> {
    const placed = await this.text.chat(prepared.call, { ...context, endpoint: "knowledge_bases.ask" });
    const completion = placed.result;
    return {
      base: prepared.base,
      model: prepared.call.model,
      answer: completion.choices[0]?.message.content ?? "",
      sources: prepared.sources,
      usage: completion.usage,
      zone: placed.zone,
    };
  }

  /** The answer as a stream of chunks (app API); billed like a chat stream, also when cut. */
  stream(prepared: PreparedAsk, context: GenerationContext): Promise<Placed<AsyncIterable<ChatChunk>>> {
    return this.text.chatStream(prepared.call, { ...context, endpoint: "knowledge_bases.chat" });
  }

  /** The hits in the rerank model's order, or as they are when no machine reranks. */
  private async rerank<T extends { text: string; score: number }>(
    question: string,
    hits: T[],
    context: GenerationContext,
  ): Promise<T[]> {
    if (hits.length < 2 || !this.catalogue.firstOfKind("rerank")) return hits;
    try {
      const placed = await this.text.rerank(
        question,
        hits.map((hit) => hit.text),
        { ...context, requestId: `${context.requestId}_rerank`, endpoint: "knowledge_bases.rerank" },
      );
      return placed.result
        .filter((score) => hits[score.index] !== undefined)
        .sort((a, b) => b.relevance_score - a.relevance_score)
        .map((score) => ({ ...(hits[score.index] as T), score: score.relevance_score }));
    } catch (error) {
      // No rerank machine answering: the fused order stands.
      if (isServiceFailure(error) && !context.signal.aborted) return hits;
      throw error;
    }
  }
}

// A passage is at most about 1,000 characters and its overlap; its place adds a file name.
const LARGEST_PASSAGE = "x".repeat(1_500);

/** `count` passages as long as passages get, to bound the answer's cost before they are found. */
function largestPassages(count: number): ChosenPassage[] {
  return Array.from({ length: count }, () => ({
    documentId: "",
    document: "x".repeat(255),
    page: null,
    heading: "x".repeat(200),
    text: LARGEST_PASSAGE,
    score: 0,
  }));
}
