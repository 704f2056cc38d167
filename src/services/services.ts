import type { BillingService } from "../billing/billing-service.ts";
import type { PriceList } from "../billing/prices.ts";
import type { PublicUrl } from "../config/public-url.ts";
import type { Config } from "../config/schema.ts";
import type { Catalogue } from "../engines/catalogue.ts";
import type { HealthProbe } from "../engines/health-probe.ts";
import type { UpstreamClient } from "../engines/http/upstream-client.ts";
import type { EngineRegistry } from "../engines/registry.ts";
import type { JobQueue } from "../jobs/job-queue.ts";
import type { AccountsService } from "./accounts.ts";
import type { ApiKeysService } from "./api-keys.ts";
import type { SpeechService } from "./audio/speech-service.ts";
import type { TranscriptionService } from "./audio/transcription-service.ts";
import type { AccountMails } from "./auth/account-mails.ts";
import type { AppSessions } from "./auth/app-sessions.ts";
import type { SignIn } from "./auth/sign-in.ts";
import type { ChatService } from "./chat/chat-service.ts";
import type { TitleUpkeep } from "./chat/title-upkeep.ts";
import type { CreditsService } from "./credits.ts";
import type { ImageFiles } from "./images/image-files.ts";
import type { ImageService } from "./images/image-service.ts";
import type { KbAsk } from "./knowledge/kb-ask.ts";
import type { KbIngest } from "./knowledge/kb-ingest.ts";
import type { KbUpkeep } from "./knowledge/kb-upkeep.ts";
import type { KnowledgeBases } from "./knowledge/knowledge-bases.ts";
import type { ModelActivations } from "./model-activations.ts";
import type { Operator } from "./operator.ts";
import type { TextGeneration } from "./text/text-generation.ts";
import type { UsageService } from "./usage.ts";
import type { VideoRunner } from "./videos/video-runner.ts";
import type { VideoService } from "./videos/video-service.ts";
import type { VideoUpkeep } from "./videos/video-upkeep.ts";

/** The domain services of one process, over one store. */
export interface Services {
  /** The configuration in force (replaced, with the engine services, by a reload). */
  config: Config;
  accounts: AccountsService;
  keys: ApiKeysService;
  credits: CreditsService;
  billing: BillingService;
  prices: PriceList;
  usage: UsageService;
  operator: Operator;
  catalogue: Catalogue;
  engines: EngineRegistry;
  /** Which on-request models the operator has activated. */
  activations: ModelActivations;
  /** Connections to the machines, closed with the app. */
  upstream: UpstreamClient;
  health: HealthProbe;
  text: TextGeneration;
  transcription: TranscriptionService;
  speech: SpeechService;
  /** Image generation (`POST /v1/images/generations`). */
  images: ImageService;
  /** Pictures kept for image links, shared by every configuration (and every instance). */
  imageFiles: ImageFiles;
  /** Video jobs of the key API (`/v1/videos`). */
  videos: VideoService;
  /** Makes the queued video jobs, one step per run of their queue entry. */
  videoRunner: VideoRunner;
  /** Deletes videos past their 7 days and queues unfinished jobs again. */
  videoUpkeep: VideoUpkeep;
  /** Knowledge bases and their documents (app API), listed to keys. */
  knowledgeBases: KnowledgeBases;
  /** Reads uploaded documents into passages, one run of their queued job. */
  kbIngest: KbIngest;
  /** Answers questions to knowledge bases (both APIs). */
  kbAsk: KbAsk;
  /** Queues documents not read yet again. */
  kbUpkeep: KbUpkeep;
  /** Queues again the automatic titles whose job was lost. */
  titleUpkeep: TitleUpkeep;
  /** Access tokens of the app API and the user behind them. */
  appSessions: AppSessions;
  /** Conversations of the app API and their streamed answers. */
  chat: ChatService;
  /** Background jobs that may be lost (automatic titles); closed with the app. */
  jobs: JobQueue;
  /**
   * Background jobs that survive a restart (video jobs): a table in the database in embedded mode,
   * BullMQ (the same queue as `jobs`) when Redis is configured; closed with the app.
   */
  durableJobs: JobQueue;
  /** Login, refresh and logout of the app API. */
  signIn: SignIn;
  /** Registration, email verification and password reset: the sign-in steps that go through mail. */
  accountMails: AccountMails;
  /** Where mail links point: `app.public_url`, or the address the server listens on. */
  publicUrl: PublicUrl;
}

/**
 * The services that follow the configuration's machines, models, prices and zones: a reload builds
 * them anew and puts them in place of the old ones, while requests in flight finish on the old.
 */
export type EngineServices = Pick<
  Services,
  | "config"
  | "prices"
  | "catalogue"
  | "engines"
  | "activations"
  | "health"
  | "text"
  | "transcription"
  | "speech"
  | "images"
  | "videos"
  | "videoRunner"
  | "kbIngest"
  | "kbAsk"
  | "chat"
>;
