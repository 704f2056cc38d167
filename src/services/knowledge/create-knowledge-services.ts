import type { FastifyBaseLogger } from "fastify";
import type { Catalogue } from "../../engines/catalogue.ts";
import type { DocumentFiles } from "../../store/document-files/document-files.ts";
import type { KbPassagesRepository } from "../../store/repositories/kb-passages.ts";
import type { KnowledgeBasesRepository } from "../../store/repositories/knowledge-bases.ts";
import type { TextGeneration } from "../text/text-generation.ts";
import { KbAsk } from "./kb-ask.ts";
import { KbIngest } from "./kb-ingest.ts";
import type { DocumentReader } from "./reading/document-reader.ts";

// The default chat model of a question: one whose id ends in `3.8-27b` (the 27b model of any family).
const DEFAULT_CHAT_MODEL = /3\.8-27b$/;

/** The knowledge services of one configuration: reading documents and answering questions. */
export function createKnowledgeServices(deps: {
  bases: KnowledgeBasesRepository;
  passages: KbPassagesRepository;
  files: DocumentFiles;
  reader: DocumentReader;
  readsPerAccount: number;
  text: TextGeneration;
  catalogue: Catalogue;
  now: () => Date;
  log: FastifyBaseLogger | undefined;
}): { kbIngest: KbIngest; kbAsk: KbAsk } {
  const chatModels = deps.catalogue.ofKind("chat");
  const defaultModel = (chatModels.find((model) => DEFAULT_CHAT_MODEL.test(model.id)) ?? chatModels[0])?.id;
  return {
    kbIngest: new KbIngest({
      bases: deps.bases,
      passages: deps.passages,
      files: deps.files,
      reader: deps.reader,
      readsPerAccount: deps.readsPerAccount,
      text: deps.text,
      tier: "slow",
      now: deps.now,
      ...(deps.log ? { log: deps.log } : {}),
    }),
    kbAsk: new KbAsk({
      passages: deps.passages,
      bases: deps.bases,
      text: deps.text,
      catalogue: deps.catalogue,
      defaultModel,
    }),
  };
}
