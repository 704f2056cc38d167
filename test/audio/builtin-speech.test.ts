import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_SPEECH_MACHINE, withBuiltinSpeech } from "../../src/config/builtin-speech.ts";
import { loadConfig, parseConfig } from "../../src/config/load.ts";
import { parseWavHeader } from "../../src/media/wav.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

describe("the embedded default speaks: built-in espeak-ng serves tts-1", () => {
  it("a configuration without a speech machine gets the built-in one and tts-1", async () => {
    const dir = await mkdtemp(join(tmpdir(), "zona-config-"));
    try {
      const config = loadConfig({}, dir);
      expect(config.models.map((model) => model.id)).toContain("tts-1");
      const machine = config.machines.find((m) => m.name === BUILTIN_SPEECH_MACHINE);
      expect(machine).toMatchObject({ protocol: "espeak", models: ["tts-1"] });
      expect(config.installation.content_checks[machine?.zone ?? ""]).toBe("none");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("not when a piper machine is declared, nor with builtin_speech off", () => {
    const piper = withBuiltinSpeech(
      parseConfig({
        installation: { zones: [{ id: "ch" }] },
        models: [{ id: "tts-1", kind: "tts" }],
        machines: [
          { name: "p", zone: "ch", protocol: "piper", url: "http://127.0.0.1:9", models: ["tts-1"] },
        ],
      }),
    );
    expect(piper.machines.map((m) => m.name)).toEqual(["p"]);
    const off = withBuiltinSpeech(parseConfig({ engines: { builtin_speech: false } }));
    expect(off.machines).toEqual([]);
    expect(off.models).toEqual([]);
  });

  it("a fallback zone with a moderation machine keeps checking texts", () => {
    const config = withBuiltinSpeech(
      parseConfig({
        installation: { fallback_zone: "ch-fallback" },
        machines: [{ name: "m", zone: "ch-fallback", protocol: "moderation", url: "http://127.0.0.1:9" }],
      }),
    );
    expect(config.installation.content_checks["ch-fallback"]).toBeUndefined();
  });

  it("the fallback zone hosts it when there is one", () => {
    const config = withBuiltinSpeech(parseConfig({ installation: { fallback_zone: "ch-fallback" } }));
    expect(config.machines[0]?.zone).toBe("ch-fallback");
  });
});

describe("POST /v1/audio/speech on the built-in engine, no server, all four languages", () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    const config = withBuiltinSpeech(parseConfig({}));
    t = await startTestApp({
      config: {
        installation: {
          fallback_zone: config.machines[0]?.zone,
          content_checks: config.installation.content_checks,
        },
        models: config.models,
        machines: config.machines,
      },
    });
    ({ key } = await t.newKey());
  });
  afterAll(() => t.close());

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
