import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { CircuitBreaker } from "../../src/engines/circuit-breaker.ts";
import { HealthProbe } from "../../src/engines/health-probe.ts";
import { EngineRegistry } from "../../src/engines/registry.ts";
import { FakeOllamaServer, FakeOpenAiServer } from "../fakes/index.ts";

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
