import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { CircuitBreaker } from "../../src/engines/circuit-breaker.ts";
import { HealthProbe, probeTimings } from "../../src/engines/health-probe.ts";
import { EngineRegistry } from "../../src/engines/registry.ts";
import {
  FakeModerationServer,
  FakeOllamaServer,
  FakeOpenAiServer,
  FakePiperServer,
  FakeWhisperServer,
} from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

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

  it("a trial whose client went away gives its place back: the next request may try", () => {
    const breaker = new CircuitBreaker();
    breaker.failure(0, true);
    expect(breaker.tryAcquire(5_000)).toBe(true);
    expect(breaker.tryAcquire(5_000)).toBe(false);
    breaker.release();
    expect(breaker.state(5_000)).toBe("half-open");
    expect(breaker.tryAcquire(5_000)).toBe(true);
  });
});

describe("Health: the operator's timings (engines.circuit_cooldown_seconds, circuit_max_cooldown_seconds)", () => {
  it("the configured cool-down opens the circuit, doubles, and stops at the configured maximum", () => {
    const config = parseConfig({
      installation: { zones: [{ id: "ch" }] },
      engines: { circuit_cooldown_seconds: 2, circuit_max_cooldown_seconds: 5 },
      models: [{ id: "m", kind: "chat" }],
      machines: [{ name: "a", zone: "ch", protocol: "openai", url: "http://127.0.0.1:9", models: ["m"] }],
    });
    const breaker = new EngineRegistry(config).machines[0]?.breaker;
    if (!breaker) throw new Error("no machine");
    breaker.failure(0, true);
    expect(breaker.openUntil()).toBe(2_000);
    breaker.failure(2_000, false);
    expect(breaker.openUntil()).toBe(6_000);
    breaker.failure(6_000, false);
    expect(breaker.openUntil()).toBe(11_000);
    breaker.failure(11_000, false);
    expect(breaker.openUntil()).toBe(16_000);
    breaker.success();
    expect(breaker.openUntil()).toBeUndefined();
    breaker.failure(20_000, true);
    expect(breaker.openUntil()).toBe(22_000);
  });

  it("a probe that is not answered within engines.probe_timeout_ms marks the machine down (timeout)", async () => {
    const fake = new FakeOpenAiServer();
    await fake.start();
    try {
      await fake.setMode("hang");
      const config = parseConfig({
        installation: { zones: [{ id: "ch" }] },
        engines: { probe_timeout_ms: 150 },
        models: [{ id: "m", kind: "chat" }],
        machines: [{ name: "slowpoke", zone: "ch", protocol: "openai", url: fake.url, models: ["m"] }],
      });
      const registry = new EngineRegistry(config);
      await new HealthProbe(registry, undefined, probeTimings(config.engines)).probeAll();
      const machine = registry.machines[0];
      expect(machine?.stats.down).toBe(true);
      expect(machine?.stats.lastError).toMatchObject({ source: "probe", kind: "timeout" });
      expect(machine?.stats.lastError?.message).toContain("150 ms");
    } finally {
      await fake.close();
    }
  });
});

describe("Health: a configuration reload keeps the live state of the machines that stay", () => {
  const machines = (url: string) => [
    { name: "same", zone: "ch", protocol: "openai", url: "http://127.0.0.1:9001", models: ["m"] },
    { name: "moved", zone: "ch", protocol: "openai", url, models: ["m"] },
    { name: "reprotocolled", zone: "ch", protocol: "openai", url: "http://127.0.0.1:9003", models: ["m"] },
  ];
  const config = (url: string, protocol = "openai", extra: Record<string, unknown> = {}) =>
    parseConfig({
      installation: { zones: [{ id: "ch" }] },
      models: [{ id: "m", kind: "chat" }],
      machines: machines(url).map((m) => (m.name === "reprotocolled" ? { ...m, protocol } : m)),
      ...extra,
    });

  it("same name, protocol and url: breaker, in-flight count and statistics carry over; others start afresh", () => {
    const before = new EngineRegistry(config("http://127.0.0.1:9002"));
    for (const machine of before.machines) {
      machine.breaker.failure(1_000, true);
      machine.stats.inFlight = 2;
      machine.stats.success(40, 1_000);
    }
    const after = new EngineRegistry(
      config("http://127.0.0.1:9999", "ollama", { engines: { circuit_cooldown_seconds: 30 } }),
      before,
    );
    const [same, moved, reprotocolled] = after.machines;
    expect(same?.breaker).toBe(before.machines[0]?.breaker);
    expect(same?.breaker.state(2_000)).toBe("open");
    expect(same?.inFlight).toBe(2);
    expect(same?.stats.latency(1_000).samples).toBe(1);
    // A request that started before the reload ends on the old machine object: the count stays right.
    if (before.machines[0]) before.machines[0].stats.inFlight -= 1;
    expect(same?.inFlight).toBe(1);
    // The kept breaker takes the new timings at its next opening.
    same?.breaker.success();
    same?.breaker.failure(0, true);
    expect(same?.breaker.openUntil()).toBe(30_000);
    for (const fresh of [moved, reprotocolled]) {
      expect(fresh?.breaker.state(2_000)).toBe("closed");
      expect(fresh?.inFlight).toBe(0);
      expect(fresh?.stats.lastSuccessAt).toBeNull();
    }
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

describe("Health: a machine that answers its probe again is used again at once", () => {
  const fake = new FakeOpenAiServer();
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    await fake.start();
    t = await startTestApp({
      config: {
        // A cool-down far longer than the test: only the probe can bring the machine back.
        installation: { zones: [{ id: "ch" }] },
        engines: { circuit_cooldown_seconds: 600, circuit_max_cooldown_seconds: 600 },
        models: [{ id: "m", kind: "chat" }],
        machines: [{ name: "only", zone: "ch", protocol: "openai", url: fake.url, models: ["m"] }],
      },
    });
    key = (await t.newKey()).key;
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  const ask = () =>
    t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });

  it("down -> requests open the circuit; back up -> still skipped; after the probe's tick the next request goes to it", async () => {
    await fake.setMode("refuse");
    expect((await ask()).status).toBe(503);
    await fake.setMode("normal");
    fake.clearRequests();
    expect((await ask()).status).toBe(503);
    expect(fake.requestsTo("/v1/chat/completions")).toHaveLength(0);
    await t.app.services.health.probeAll();
    const response = await ask();
    expect(response.status).toBe(200);
    expect(fake.requestsTo("/v1/chat/completions")).toHaveLength(1);
  });
});
