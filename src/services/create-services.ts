import type { FastifyBaseLogger } from "fastify";
import { KeyCache } from "../auth/key-cache.ts";
import { BillingService } from "../billing/billing-service.ts";
import { PriceList } from "../billing/prices.ts";
import type { SharedMoney } from "../billing/shared/shared-money.ts";
import { PublicUrl } from "../config/public-url.ts";
import type { Config } from "../config/schema.ts";
import { createAdapters } from "../engines/adapters/index.ts";
import { Catalogue } from "../engines/catalogue.ts";
import { HealthProbe, probeTimings } from "../engines/health-probe.ts";
import { UpstreamClient } from "../engines/http/upstream-client.ts";
import { EngineRegistry } from "../engines/registry.ts";
import { Router } from "../engines/router.ts";
import type { UpstreamObserver } from "../engines/upstream-observer.ts";
import { InProcessQueue } from "../jobs/in-process-queue.ts";
import type { JobQueue } from "../jobs/job-queue.ts";
import { createMailer } from "../mail/create-mailer.ts";
import type { BillingMetrics } from "../metrics/billing-metrics.ts";
import type { Store } from "../store/database.ts";
import type { DocumentFiles } from "../store/document-files/document-files.ts";
import { documentFilesOf } from "../store/document-files/document-files-of.ts";
import { AccountsRepository } from "../store/repositories/accounts.ts";
import { ApiKeysRepository } from "../store/repositories/api-keys.ts";
import { BillingRepository } from "../store/repositories/billing.ts";
import { ConversationsRepository } from "../store/repositories/conversations.ts";
import { CreditsRepository } from "../store/repositories/credits.ts";
import { EmailTokensRepository } from "../store/repositories/email-tokens.ts";
import { ImageFilesRepository } from "../store/repositories/image-files.ts";
import { KbPassagesRepository } from "../store/repositories/kb-passages.ts";
import { KnowledgeBasesRepository } from "../store/repositories/knowledge-bases.ts";
import { MailOutboxRepository } from "../store/repositories/mail-outbox.ts";
import { ModelActivationsRepository } from "../store/repositories/model-activations.ts";
import { RefreshTokensRepository } from "../store/repositories/refresh-tokens.ts";
import { ServiceSecretsRepository } from "../store/repositories/service-secrets.ts";
import { UsageRepository } from "../store/repositories/usage.ts";
import { VideoJobsRepository } from "../store/repositories/video-jobs.ts";
import { AccountsService } from "./accounts.ts";
import { ApiKeysService } from "./api-keys.ts";
import { ContentCheck } from "./audio/content-check.ts";
import { SpeechService } from "./audio/speech-service.ts";
import { TranscriptionService } from "./audio/transcription-service.ts";
import { AccountMails } from "./auth/account-mails.ts";
import { AppSessions } from "./auth/app-sessions.ts";
import { SignIn } from "./auth/sign-in.ts";
import { ChatService } from "./chat/chat-service.ts";
import { TitleUpkeep } from "./chat/title-upkeep.ts";
import { CreditsService } from "./credits.ts";
import { ImageFiles } from "./images/image-files.ts";
import { ImageService } from "./images/image-service.ts";
import { createKnowledgeServices } from "./knowledge/create-knowledge-services.ts";
import { KbUpkeep } from "./knowledge/kb-upkeep.ts";
import { KnowledgeBases } from "./knowledge/knowledge-bases.ts";
import { DocumentReader } from "./knowledge/reading/document-reader.ts";
import { ModelActivations } from "./model-activations.ts";
import { Operator } from "./operator.ts";
import type { EngineServices, Services } from "./services.ts";
import { TextService } from "./text/text-service.ts";
import { UsageService } from "./usage.ts";
import { createVideoServices } from "./videos/create-video-services.ts";
import { VideoUpkeep } from "./videos/video-upkeep.ts";

export type { EngineServices, Services } from "./services.ts";

/** What the engine services are built on: the parts of a process that a reload keeps. */
interface Foundation {
  stable: Omit<Services, keyof EngineServices>;
  store: Store;
  activationsRepo: ModelActivationsRepository;
  now: () => Date;
  log: FastifyBaseLogger | undefined;
  /** Hears of every upstream attempt of every router built (metrics). */
  observer: UpstreamObserver | undefined;
  videoJobs: VideoJobsRepository;
  kbBases: KnowledgeBasesRepository;
  kbPassages: KbPassagesRepository;
  kbFiles: DocumentFiles;
  /** Reads documents in processes of their own; kept across reloads (its caps are read at start). */
  documentReader: DocumentReader;
}

/** Where the services report to (the app's metrics); tests and the CLI build services without. */
export interface ServiceMetrics {
  upstream?: UpstreamObserver;
  billing?: BillingMetrics;
}

const foundations = new WeakMap<Services, Foundation>();

/**
 * Builds the services; `now` lets tests move the clock. Background jobs run on `jobs` (the app
 * passes the configured queue); without it they run in the process. Jobs that must survive a restart
 * run on `durableJobs` (the app passes the configured one); without it, on `jobs`.
 */
export function createServices(
  config: Config,
  store: Store,
  now: () => Date = () => new Date(),
  log?: FastifyBaseLogger,
  jobs: JobQueue = new InProcessQueue(log ? { log } : {}),
  metrics: ServiceMetrics = {},
  durableJobs: JobQueue = jobs,
  sharedMoney?: SharedMoney,
): Services {
  const keyCache = new KeyCache();
  // The services once built: keys and the operator read the zones and models in force through it.
  let live: Services | undefined;
  // Set below: a disabled account's access tokens must stop working at once, like its keys.
  let appSessions: AppSessions | undefined;
  const accounts = new AccountsService(new AccountsRepository(store.db), config.installation.language, () => {
    keyCache.clear();
    appSessions?.forgetAll();
  });
  const keys = new ApiKeysService({
    repo: new ApiKeysRepository(store.db),
    accounts,
    zoneIds: () => (live ?? { config }).config.installation.zones.map((zone) => zone.id),
    now,
    cache: keyCache,
  });
  const billing = new BillingService({
    repo: new BillingRepository(store.db, store.named),
    prepaid: config.installation.prepaid,
    holdSeconds: config.billing.reservation_timeout_seconds,
    ...(store.usageJournal ? { journal: store.usageJournal } : {}),
    ...(sharedMoney ? { shared: sharedMoney } : {}),
    now,
    ...(log ? { log } : {}),
    ...(metrics.billing ? { metrics: metrics.billing } : {}),
  });
  const credits = new CreditsService(new CreditsRepository(store.db), accounts, billing);
  const usage = new UsageService({
    repo: new UsageRepository(store.db),
    accounts,
    keys,
    now,
    written: () => billing.usageWritten(),
    bookedSpend: (keyId, month) => billing.keySpend(keyId, month),
  });
  const activationsRepo = new ModelActivationsRepository(store.db);
  const mailOutbox = new MailOutboxRepository(store.db);
  const operator = new Operator({
    accounts,
    mailOutbox,
    knowledgeBases: new KnowledgeBasesRepository(store.db),
    keys,
    credits,
    usage,
    models: () => {
      if (!live) throw new Error("services are not built yet");
      return { config: live.config, engines: live.engines, activations: live.activations };
    },
    currency: config.installation.currency,
    now,
  });
  const upstream = new UpstreamClient({
    connectMs: config.engines.connect_timeout_ms,
    headersMs: config.engines.first_byte_timeout_ms,
    bodyMs: config.engines.idle_timeout_ms,
  });
  appSessions = new AppSessions({
    accounts,
    secrets: new ServiceSecretsRepository(store.db),
    now,
    accessSeconds: config.app.access_token_seconds,
  });
  const signIn = new SignIn({
    accounts,
    sessions: appSessions,
    refreshTokens: new RefreshTokensRepository(store.db),
    now,
    refreshSeconds: config.app.refresh_token_seconds,
    ...(log ? { log } : {}),
  });
  const publicUrl = new PublicUrl(config.app.public_url, config.server.port);
  const accountMails = new AccountMails({
    accounts,
    tokens: new EmailTokensRepository(store.db),
    signIn,
    sessions: appSessions,
    mailer: createMailer(config, mailOutbox, now, log),
    publicUrl: () => publicUrl.get(),
    now,
    ...(log ? { log } : {}),
  });
  const imageFiles = new ImageFiles({
    repo: new ImageFilesRepository(store.db),
    secrets: new ServiceSecretsRepository(store.db),
    now,
    ...(log ? { log } : {}),
  });
  const videoJobs = new VideoJobsRepository(store.db);
  const videoUpkeep = new VideoUpkeep({ repo: videoJobs, queue: durableJobs, now, ...(log ? { log } : {}) });
  const kbBases = new KnowledgeBasesRepository(store.db);
  const kbFiles = documentFilesOf(store);
  const logged = log ? { log } : {};
  const knowledgeBases = new KnowledgeBases({ repo: kbBases, files: kbFiles, queue: durableJobs, ...logged });
  const kbUpkeep = new KbUpkeep({ repo: kbBases, files: kbFiles, queue: durableJobs, ...logged });
  const conversations = new ConversationsRepository(store.db);
  const titleUpkeep = new TitleUpkeep({ repo: conversations, queue: jobs, now, ...logged });
  const foundation: Foundation = {
    stable: {
      knowledgeBases,
      kbUpkeep,
      titleUpkeep,
      imageFiles,
      videoUpkeep,
      durableJobs,
      accounts,
      keys,
      credits,
      billing,
      usage,
      operator,
      upstream,
      appSessions,
      signIn,
      accountMails,
      publicUrl,
      jobs,
    },
    store,
    activationsRepo,
    now,
    log,
    observer: metrics.upstream,
    videoJobs,
    kbBases,
    kbPassages: new KbPassagesRepository(store.db),
    kbFiles,
    documentReader: new DocumentReader({
      memoryMb: config.knowledge.read_memory_mb,
      timeoutMs: config.knowledge.read_timeout_seconds * 1000,
      concurrency: config.knowledge.concurrent_reads,
    }),
  };
  const services: Services = { ...foundation.stable, ...createEngineServices(config, foundation) };
  foundations.set(services, foundation);
  live = services;
  return services;
}

/**
 * Puts the engine services of a new configuration in place of the current ones and returns those
 * it replaced. The services object stays the same, so routes that read it per request take the new
 * ones; requests in flight keep the instances they already hold.
 */
export function replaceEngineServices(services: Services, config: Config): EngineServices {
  const foundation = foundations.get(services);
  if (!foundation) throw new Error("these services were not built by createServices");
  const replaced: EngineServices = {
    config: services.config,
    prices: services.prices,
    catalogue: services.catalogue,
    engines: services.engines,
    activations: services.activations,
    health: services.health,
    text: services.text,
    transcription: services.transcription,
    speech: services.speech,
    images: services.images,
    videos: services.videos,
    videoRunner: services.videoRunner,
    kbIngest: services.kbIngest,
    kbAsk: services.kbAsk,
    chat: services.chat,
  };
  Object.assign(services, createEngineServices(config, foundation, services.engines));
  return replaced;
}

/**
 * Builds the engine services of a configuration over the stable ones. `previous` is the registry
 * they replace: its machines that stay keep their health and load.
 */
function createEngineServices(
  config: Config,
  foundation: Foundation,
  previous?: EngineRegistry,
): EngineServices {
  const { now, log, store } = foundation;
  const { billing, upstream, jobs } = foundation.stable;
  const prices = new PriceList(config);
  const catalogue = new Catalogue(config);
  const engines = new EngineRegistry(config, previous);
  const activations = new ModelActivations({
    repo: foundation.activationsRepo,
    catalogue,
    now,
  });
  const installationZones = config.installation.zones.map((zone) => zone.id);
  const router = new Router(engines, {
    adapters: createAdapters(upstream, {
      piperVoices: config.engines.piper_voices,
      imageTimeoutMs: config.engines.image_timeout_seconds * 1000,
      // Each call to a video server is short (the clip itself is polled): a machine that does not
      // answer one within the first-byte timeout is given up for the next.
      videoRequestTimeoutMs: config.engines.first_byte_timeout_ms,
    }),
    installationHasZones: installationZones.length > 0,
    ...(log ? { log } : {}),
    ...(foundation.observer ? { observer: foundation.observer } : {}),
  });
  const text = new TextService({ router, catalogue, billing, prices, installationZones, activations });
  const fallbackZone = config.installation.fallback_zone;
  const transcription = new TranscriptionService({
    router,
    billing,
    prices,
    installationZones,
    fallbackZone,
    machineZones: [...new Set(config.machines.map((machine) => machine.zone))],
    timeoutMs: config.engines.transcription_timeout_seconds * 1000,
    zoneTimeoutMs: config.engines.zone_transcription_timeout_seconds * 1000,
  });
  const contentCheck = new ContentCheck({
    router,
    registry: engines,
    policies: config.installation.content_checks,
  });
  const speech = new SpeechService({
    router,
    registry: engines,
    billing,
    prices,
    contentCheck,
    fallbackZone,
  });
  const images = new ImageService({
    router,
    registry: engines,
    catalogue,
    billing,
    prices,
    contentCheck,
    files: foundation.stable.imageFiles,
    installationZones,
    timeoutMs: config.engines.image_timeout_seconds * 1000,
    now,
  });
  const { videos, videoRunner } = createVideoServices(config, {
    repo: foundation.videoJobs,
    queue: foundation.stable.durableJobs,
    registry: engines,
    router,
    catalogue,
    billing,
    prices,
    contentCheck,
    installationZones,
    now,
    log,
  });
  const knowledge = createKnowledgeServices({
    bases: foundation.kbBases,
    passages: foundation.kbPassages,
    files: foundation.kbFiles,
    reader: foundation.documentReader,
    readsPerAccount: config.knowledge.concurrent_reads_per_account,
    text,
    catalogue,
    now,
    log,
  });
  const health = new HealthProbe(engines, log, probeTimings(config.engines));
  return {
    config,
    prices,
    catalogue,
    engines,
    activations,
    health,
    text,
    transcription,
    speech,
    images,
    videos,
    videoRunner,
    ...knowledge,
    chat: new ChatService({ config, db: store.db, text, jobs, log }),
  };
}
