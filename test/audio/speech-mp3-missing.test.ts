import { afterAll, beforeAll, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { createAdapters } from "../../src/engines/adapters/index.ts";
import { Router } from "../../src/engines/router.ts";
import { ApiError } from "../../src/errors/catalogue.ts";
import { encodeMp3 } from "../../src/media/mp3.ts";
import { ContentCheck } from "../../src/services/audio/content-check.ts";
import { SpeechService } from "../../src/services/audio/speech-service.ts";
import { createServices, type Services } from "../../src/services/create-services.ts";
import type { Store } from "../../src/store/database.ts";
import { FakePiperServer } from "../fakes/index.ts";
import { openTestStore } from "../helpers/test-store.ts";

let piper: FakePiperServer;
let close: () => Promise<void>;
let store: Store;
let services: Services;
let speech: SpeechService;

beforeAll(async () => {
  piper = new FakePiperServer();
  const started = await piper.start();
  close = started.close;
  const config = parseConfig({
    installation: { zones: [{ id: "ch" }], content_checks: { ch: "none" } },
    models: [{ id: "tts-1", kind: "tts" }],
    machines: [{ name: "piper", zone: "ch", protocol: "piper", url: started.url, models: ["tts-1"] }],
  });
  store = await openTestStore();
  services = createServices(config, store);
  const router = new Router(services.engines, {
    adapters: createAdapters(services.upstream),
    installationHasZones: true,
  });
  speech = new SpeechService({
    router,
    registry: services.engines,
    billing: services.billing,
    prices: services.prices,
    contentCheck: new ContentCheck({ router, registry: services.engines, policies: { ch: "none" } }),
    fallbackZone: undefined,
    // An encoder module that is not installed: what a broken installation would meet.
    encodeMp3: (pcm, rate, channels, mark) =>
      encodeMp3(pcm, rate, channels, mark, { encoderModule: "zona-no-such-mp3-encoder" }),
  });
});
afterAll(async () => {
  await services.billing.drain();
  await services.upstream.close();
  await store.close();
  await close();
});

it("Speech response: a missing MP3 encoder is 502 bad_gateway, never a WAV labelled MP3", async () => {
  const account = await services.accounts.create({ email: "mp3@example.com" });
  const { row } = await services.keys.create(account.id, { name: "mp3" });
  const context = {
    requestId: "req_mp3_missing",
    principal: {
      keyId: row.id,
      accountId: account.id,
      keyName: row.name,
      zones: null,
      monthlyLimitMicros: null,
    },
    tier: "slow" as const,
    endpoint: "audio.speech",
    signal: new AbortController().signal,
  };
  const failure = await speech
    .speak({ input: "Ciao", voice: undefined, language: "it", format: "mp3" }, context)
    .catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(ApiError);
  expect(failure).toMatchObject({ status: 502, type: "bad_gateway" });
  expect(piper.requests).toHaveLength(1);
  const wav = await speech.speak(
    { input: "Ciao", voice: undefined, language: "it", format: "wav" },
    {
      ...context,
      requestId: "req_mp3_missing_wav",
    },
  );
  expect(wav.contentType).toBe("audio/wav");
});
