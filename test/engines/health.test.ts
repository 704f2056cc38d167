import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { CircuitBreaker } from "../../src/engines/circuit-breaker.ts";
import { HealthProbe } from "../../src/engines/health-probe.ts";
import { EngineRegistry } from "../../src/engines/registry.ts";
import {
  FakeModerationServer,
  FakeOllamaServer,
  FakeOpenAiServer,
  FakePiperServer,
  FakeWhisperServer,
} from "../fakes/index.ts";

describe("Health: passive circuit breaker (DESIGN Engines: failures open a short circuit breaker)", () => {
  it("a refused connection opens at once; errors open after three; the cooldown doubles; a success closes", () => {
    const breaker = new CircuitBreaker();
    breaker.failure(0, false);
    breaker.failure(0, false);
    expect(breaker.state(0)).toBe("closed");
    breaker.failure(0, false);
    expect(breaker.state(0)).toBe("open");
    expect(breaker.tryAcquire(4_999)).toBe(false);
    // After the cooldown one trial goes through, not two.
    expect(breaker.tryAcquire(5_000)).toBe(true);
    expect(breaker.tryAcquire(5_000)).toBe(false);
    breaker.failure(5_000, false);
    expect(breaker.state(14_999)).toBe("open");
    expect(breaker.state(15_000)).toBe("half-open");
    breaker.success();
    expect(breaker.state(15_000)).toBe("closed");

    const down = new CircuitBreaker();
    down.failure(0, true);
    expect(down.state(1)).toBe("open");
  });
});

describe("Health: active probe", () => {
  const openai = new FakeOpenAiServer();
  const ollama = new FakeOllamaServer();
  let urls: string[] = [];
  let closers: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    const started = await Promise.all([openai.start(), ollama.start()]);
    urls = started.map((s) => s.url);
    closers = started.map((s) => s.close);
  });
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it("marks a machine that stops answering down, and takes it back when it answers again", async () => {
    const config = parseConfig({
      installation: { zones: [{ id: "ch" }] },
      models: [{ id: "m", kind: "chat" }],
      machines: [
        { name: "vllm", zone: "ch", protocol: "openai", url: `${urls[0]}/v1`, models: ["m"] },
        { name: "ollama", zone: "ch", protocol: "ollama", url: urls[1], models: ["m"] },
      ],
    });
    const registry = new EngineRegistry(config);
    const probe = new HealthProbe(registry);
    const [vllm, local] = registry.machines;
    await probe.probeAll();
    expect(vllm?.breaker.state(Date.now())).toBe("closed");
    expect(openai.requestsTo("/health")).toHaveLength(1);
    expect(ollama.requestsTo("/api/version")).toHaveLength(1);

    await openai.setMode("refuse");
    await probe.probeAll();
    expect(vllm?.breaker.state(Date.now())).toBe("open");
    expect(local?.breaker.state(Date.now())).toBe("closed");

    await openai.setMode("normal");
    await probe.probeAll();
    expect(vllm?.breaker.state(Date.now())).toBe("closed");
  });
});

describe("Health: active probe of the audio protocols", () => {
  const whisper = new FakeWhisperServer();
  const piper = new FakePiperServer();
  const moderation = new FakeModerationServer();
  beforeAll(async () => {
    await Promise.all([whisper.start(), piper.start(), moderation.start()]);
  });
  afterAll(async () => {
    await Promise.all([whisper.close(), piper.close(), moderation.close()]);
  });

  it("asks whisper and moderation servers /health, Piper GET / (405 is up), and never the built-in espeak", async () => {
    const config = parseConfig({
      installation: { zones: [{ id: "ch" }] },
      models: [
        { id: "asr-1", kind: "asr" },
        { id: "tts-1", kind: "tts" },
      ],
      machines: [
        { name: "asr", zone: "ch", protocol: "whisper", url: whisper.url, models: ["asr-1"] },
        { name: "piper", zone: "ch", protocol: "piper", url: piper.url, models: ["tts-1"] },
        { name: "guard", zone: "ch", protocol: "moderation", url: `${moderation.url}/v1` },
        // An espeak machine needs no url; one given anyway (here a closed port) is not probed.
        { name: "espeak", zone: "ch", protocol: "espeak", url: "http://127.0.0.1:9", models: ["tts-1"] },
      ],
    });
    const registry = new EngineRegistry(config);
    const probe = new HealthProbe(registry);
    const byName = (name: string) => registry.machines.find((m) => m.config.name === name);
    await probe.probeAll();
    expect(whisper.requestsTo("/health")).toHaveLength(1);
    expect(moderation.requestsTo("/health")).toHaveLength(1);
    expect(piper.requests.map((r) => [r.method, r.path])).toEqual([["GET", "/"]]);
    for (const name of ["asr", "piper", "guard", "espeak"]) {
      expect(byName(name)?.breaker.state(Date.now())).toBe("closed");
    }

    await whisper.setMode("refuse");
    await piper.setMode("error500");
    await probe.probeAll();
    expect(byName("asr")?.breaker.state(Date.now())).toBe("open");
    expect(byName("piper")?.breaker.state(Date.now())).toBe("open");
    expect(byName("espeak")?.breaker.state(Date.now())).toBe("closed");
    await Promise.all([whisper.setMode("normal"), piper.setMode("normal")]);
    await probe.probeAll();
    expect(byName("asr")?.breaker.state(Date.now())).toBe("closed");
    expect(byName("piper")?.breaker.state(Date.now())).toBe("closed");
  });
});
