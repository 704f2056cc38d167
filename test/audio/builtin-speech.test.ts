import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { BUILTIN_SPEECH_MACHINE, withBuiltinSpeech } from "../../src/config/builtin-speech.ts";
import { loadConfig, parseConfig } from "../../src/config/load.ts";
import type { Config } from "../../src/config/schema.ts";
import { parseWavHeader } from "../../src/media/wav.ts";
import { FakeModerationServer, FakePiperServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

/**
 * The parts of a configuration that `startTestApp` parses again, as a file would give them (the
 * test app reads a raw configuration; `withBuiltinSpeech` runs on the parsed one in `loadConfig`).
 */
function asRaw(config: Config): Record<string, unknown> {
  return {
    installation: config.installation,
    engines: config.engines,
    models: config.models,
    machines: config.machines.map(({ upstream_names, models, ...machine }) => ({
      ...machine,
      models: models.map((id) => ({ id, upstream: upstream_names[id] ?? id })),
    })),
  };
}

const PIPER_URL = "http://127.0.0.1:9";

describe("where the built-in speech engine is, and which content check its texts get", () => {
  it("a configuration without a speech machine gets the built-in one and tts-1, read unchecked", async () => {
    const dir = await mkdtemp(join(tmpdir(), "zona-config-"));
    try {
      const config = loadConfig({}, dir);
      expect(config.models.map((model) => model.id)).toContain("tts-1");
      const machine = config.machines.find((m) => m.name === BUILTIN_SPEECH_MACHINE);
      expect(machine).toMatchObject({ protocol: "espeak", models: ["tts-1"], zone: "builtin" });
      expect(config.installation.content_checks.builtin).toBe("none");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("beside a declared piper machine it is added last, in the piper's zone, and no check is loosened", () => {
    const config = withBuiltinSpeech(
      parseConfig({
        installation: { zones: [{ id: "ch" }], fallback_zone: "ch-fallback" },
        models: [{ id: "tts-1", kind: "tts" }],
        machines: [{ name: "p", zone: "ch-fallback", protocol: "piper", url: PIPER_URL, models: ["tts-1"] }],
      }),
    );
    expect(config.machines.map((m) => [m.name, m.zone])).toEqual([
      ["p", "ch-fallback"],
      [BUILTIN_SPEECH_MACHINE, "ch-fallback"],
    ]);
    expect(config.installation.content_checks).toEqual({});
  });

  it("a piper machine outside the fallback zone takes it to the piper's zone", () => {
    const config = withBuiltinSpeech(
      parseConfig({
        installation: { zones: [{ id: "ch" }], fallback_zone: "ch-fallback" },
        models: [{ id: "tts-1", kind: "tts" }],
        machines: [{ name: "p", zone: "ch", protocol: "piper", url: PIPER_URL, models: ["tts-1"] }],
      }),
    );
    expect(config.machines.at(-1)).toMatchObject({ name: BUILTIN_SPEECH_MACHINE, zone: "ch" });
    expect(config.installation.content_checks).toEqual({});
  });

  it("not with builtin_speech off, nor beside a declared espeak machine (the same engine)", () => {
    const off = withBuiltinSpeech(parseConfig({ engines: { builtin_speech: false } }));
    expect(off.machines).toEqual([]);
    expect(off.models).toEqual([]);
    const espeak = withBuiltinSpeech(
      parseConfig({
        installation: { zones: [{ id: "ch" }] },
        models: [{ id: "tts-1", kind: "tts" }],
        machines: [{ name: "e", zone: "ch", protocol: "espeak", models: ["tts-1"] }],
      }),
    );
    expect(espeak.machines.map((m) => m.name)).toEqual(["e"]);
  });

  it("alone, in a fallback zone with a moderation machine, it keeps checking texts", () => {
    const config = withBuiltinSpeech(
      parseConfig({
        installation: { fallback_zone: "ch-fallback" },
        machines: [{ name: "m", zone: "ch-fallback", protocol: "moderation", url: PIPER_URL }],
      }),
    );
    expect(config.machines.at(-1)?.zone).toBe("ch-fallback");
    expect(config.installation.content_checks["ch-fallback"]).toBeUndefined();
  });
});

describe("POST /v1/audio/speech on the built-in engine, no server, all four languages", () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    const config = withBuiltinSpeech(parseConfig({}));
    // The zone "builtin" exists only after loading; a raw configuration names it as the fallback zone.
    const zone = config.machines[0]?.zone;
    t = await startTestApp({
      config: { ...asRaw(config), installation: { ...config.installation, fallback_zone: zone } },
    });
    ({ key } = await t.newKey());
  });
  afterAll(() => t?.close());

  const speak = (body: unknown) =>
    t.fetch("/v1/audio/speech", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it.each([
    ["it", "Buongiorno a tutti, questa è una prova."],
    ["en", "Good morning, this is a test."],
    ["de", "Guten Morgen, das ist ein Test."],
    ["fr", "Bonjour à tous, ceci est un essai."],
  ])("language %s: a 16-bit WAV of the text", async (language, input) => {
    const response = await speak({ input, language });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/wav");
    const wav = Buffer.from(await response.arrayBuffer());
    const header = parseWavHeader(wav);
    expect(header.ok).toBe(true);
    if (header.ok) {
      expect(header.info.bitsPerSample).toBe(16);
      expect(header.info.durationSeconds).toBeGreaterThan(0.5);
    }
  });

  it("mp3 too", async () => {
    const response = await speak({ input: "Ciao", response_format: "mp3" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/mpeg");
  });
});

describe("declared speech machines first, the built-in engine last", () => {
  const piper = new FakePiperServer();
  const moderation = new FakeModerationServer();
  let on: TestApp;
  let off: TestApp;
  let onKey: string;
  let offKey: string;

  /** The installation of the example: piper and a content check in the fallback zone. */
  const installation = (builtinSpeech: boolean) =>
    asRaw(
      withBuiltinSpeech(
        parseConfig({
          installation: { zones: [{ id: "ch" }], fallback_zone: "ch-fallback" },
          tiers: { slow: { multiplier: 1, requests_per_minute: 100_000 } },
          rate_limits: { endpoint_limits: { audio_speech: 100_000 } },
          engines: { builtin_speech: builtinSpeech },
          models: [{ id: "tts-1", kind: "tts" }],
          machines: [
            { name: "piper", zone: "ch-fallback", protocol: "piper", url: piper.url, models: ["tts-1"] },
            { name: "guard", zone: "ch-fallback", protocol: "moderation", url: moderation.url },
          ],
        }),
      ),
    );

  beforeAll(async () => {
    await Promise.all([piper.start(), moderation.start()]);
    on = await startTestApp({ config: installation(true) });
    off = await startTestApp({ config: installation(false) });
    ({ key: onKey } = await on.newKey());
    ({ key: offKey } = await off.newKey());
  });
  afterAll(async () => {
    await Promise.all([on?.close(), off?.close()]);
    await Promise.all([piper.close(), moderation.close()]);
  });
  beforeEach(async () => {
    await Promise.all([piper.setMode("normal"), moderation.setMode("normal")]);
    piper.clearRequests();
    moderation.clearRequests();
  });

  const speak = async (t: TestApp, key: string, input = "Buongiorno a tutti.") => {
    const response = await t.fetch("/v1/audio/speech", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ input }),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    return { status: response.status, type: response.headers.get("content-type"), bytes };
  };

  it("piper up: piper reads the text, after the zone's check", async () => {
    const answer = await speak(on, onKey);
    expect(answer.status).toBe(200);
    expect(piper.voicesAsked).toEqual(["it_IT-paola-medium"]);
    expect(moderation.requestsTo("/v1/moderations")).toHaveLength(1);
  });

  it.each([
    ["down (its port closed)", "refuse"],
    ["failing (500)", "error500"],
  ] as const)("piper %s: the built-in engine reads the checked text", async (_how, mode) => {
    await piper.setMode(mode);
    for (let i = 0; i < 2; i++) {
      const answer = await speak(on, onKey);
      expect(answer.status).toBe(200);
      expect(answer.type).toBe("audio/wav");
      expect(parseWavHeader(answer.bytes).ok).toBe(true);
    }
    expect(piper.voicesAsked).toEqual([]);
    expect(moderation.requestsTo("/v1/moderations")).toHaveLength(2);
  });

  it("a flagged text is refused, whichever engine would read it", async () => {
    await piper.setMode("refuse");
    const answer = await speak(on, onKey, "This is forbidden.");
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.bytes.toString()).error.code).toBe("input_refused");
  });

  it("builtin_speech off and piper down: 502 bad_gateway", async () => {
    await piper.setMode("refuse");
    const answer = await speak(off, offKey);
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.bytes.toString()).error.type).toBe("bad_gateway");
  });

  // Last: the moderation machine's circuit stays open a while after it refused.
  it("piper down and the check unanswered: nothing is read (503 moderation_unavailable)", async () => {
    await Promise.all([piper.setMode("refuse"), moderation.setMode("refuse")]);
    const answer = await speak(on, onKey);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.bytes.toString()).error.code).toBe("moderation_unavailable");
  });
});
