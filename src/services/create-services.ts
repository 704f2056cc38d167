import type { FastifyBaseLogger } from "fastify";
import { KeyCache } from "../auth/key-cache.ts";
import { BillingService } from "../billing/billing-service.ts";
import { PriceList } from "../billing/prices.ts";
import type { Config } from "../config/schema.ts";
import { createAdapters } from "../engines/adapters/index.ts";
import { Catalogue } from "../engines/catalogue.ts";
import { HealthProbe } from "../engines/health-probe.ts";
import { UpstreamClient } from "../engines/http/upstream-client.ts";
import { EngineRegistry } from "../engines/registry.ts";
import { Router } from "../engines/router.ts";
import type { Store } from "../store/database.ts";
import { AccountsRepository } from "../store/repositories/accounts.ts";
import { ApiKeysRepository } from "../store/repositories/api-keys.ts";
import { BillingRepository } from "../store/repositories/billing.ts";
import { CreditsRepository } from "../store/repositories/credits.ts";
import { ModelActivationsRepository } from "../store/repositories/model-activations.ts";
import { ServiceSecretsRepository } from "../store/repositories/service-secrets.ts";
import { UsageRepository } from "../store/repositories/usage.ts";
import { AccountsService } from "./accounts.ts";
import { ApiKeysService } from "./api-keys.ts";
import { ContentCheck } from "./audio/content-check.ts";
import { SpeechService } from "./audio/speech-service.ts";
import { TranscriptionService } from "./audio/transcription-service.ts";
import { AppSessions } from "./auth/app-sessions.ts";
import { CreditsService } from "./credits.ts";
import { ModelActivations } from "./model-activations.ts";
import { Operator } from "./operator.ts";
import { TextService } from "./text/text-service.ts";
import { UsageService } from "./usage.ts";

/** The domain services of one process, over one store. */
export interface Services {
  accounts: AccountsService;
  keys: ApiKeysService;
  credits: CreditsService;
  billing: BillingService;
  prices: PriceList;
  usage: UsageService;
  operator: Operator;
  catalogue: Catalogue;
  engines: EngineRegistry;
  /** Connections to the machines, closed with the app. */
  upstream: UpstreamClient;
  health: HealthProbe;
  text: TextService;
  transcription: TranscriptionService;
  speech: SpeechService;
  /** Access tokens of the app API and the user behind them. */
  appSessions: AppSessions;
}

/** Builds the services; `now` lets tests move the clock. */
export function createServices(
  config: Config,
  store: Store,
  now: () => Date = () => new Date(),
  log?: FastifyBaseLogger,
): Services {
  const keyCache = new KeyCache();
  const accounts = new AccountsService(new AccountsRepository(store.db), config.installation.language, () =>
    keyCache.clear(),
  );
  const keys = new ApiKeysService({
    repo: new ApiKeysRepository(store.db),
    accounts,
    zoneIds: config.installation.zones.map((zone) => zone.id),
    now,
    cache: keyCache,
  });
  const credits = new CreditsService(new CreditsRepository(store.db), accounts);
  const billing = new BillingService({
    repo: new BillingRepository(store.db),
    prepaid: config.installation.prepaid,
    holdSeconds: config.billing.reservation_timeout_seconds,
    now,
    ...(log ? { log } : {}),
  });
  const usage = new UsageService({ repo: new UsageRepository(store.db), accounts, keys, now });
  const prices = new PriceList(config);
  const catalogue = new Catalogue(config);
  const engines = new EngineRegistry(config);
  const activations = new ModelActivations({
    repo: new ModelActivationsRepository(store.db),
    catalogue,
    now,
  });
  const operator = new Operator({
    accounts,
    keys,
    credits,
    usage,
    models: { config, engines, activations },
    currency: config.installation.currency,
    now,
  });
  const installationZones = config.installation.zones.map((zone) => zone.id);
  const upstream = new UpstreamClient({
    connectMs: config.engines.connect_timeout_ms,
    headersMs: config.engines.first_byte_timeout_ms,
    bodyMs: config.engines.idle_timeout_ms,
  });
  const router = new Router(engines, {
    adapters: createAdapters(upstream),
    installationHasZones: installationZones.length > 0,
  });
  const text = new TextService({ router, catalogue, billing, prices, installationZones, activations });
  const fallbackZone = config.installation.fallback_zone;
  const transcription = new TranscriptionService({
    router,
    billing,
    prices,
    installationZones,
    fallbackZone,
    timeoutMs: config.engines.transcription_timeout_seconds * 1000,
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
  const appSessions = new AppSessions({
    accounts,
    secrets: new ServiceSecretsRepository(store.db),
    now,
    accessSeconds: config.app.access_token_seconds,
  });
  const health = new HealthProbe(engines, log);
  return {
    accounts,
    keys,
    credits,
    billing,
    prices,
    usage,
    operator,
    catalogue,
    engines,
    upstream,
    health,
    text,
    transcription,
    speech,
    appSessions,
  };
}
