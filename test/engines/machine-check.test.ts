import { join } from "node:path";
import { Writable } from "node:stream";
import type { FastifyBaseLogger } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.ts";
import { PIPER_VOICES } from "../../src/engines/adapters/piper-adapter.ts";
import { checkMachines, type MachineCheck } from "../../src/engines/machine-check.ts";
import type { MachineConfig } from "../../src/engines/types.ts";
import {
  FakeModerationServer,
  FakeOllamaServer,
  FakeOpenAiServer,
  FakePiperServer,
  FakeTeiServer,
  FakeWhisperServer,
  fakeMachine,
} from "../fakes/index.ts";
import { freePort } from "../helpers/free-port.ts";

// biome-ignore lint/suspicious/noExplicitAny: log lines are checked by assertions.
type LogLine = any;

/** A pino logger whose JSON lines land in an array. */
function capture(): { log: FastifyBaseLogger; lines: LogLine[]; text: () => string } {
  const raw: string[] = [];
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      raw.push(String(chunk));
      for (const line of String(chunk).split("\n")) if (line.trim() !== "") lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level: "info" }, sink), lines, text: () => raw.join("") };
}

const WARN = 40;
const INFO = 30;
const TIMEOUT_MS = 1_000;
const API_KEY = "sk-machine-secret-0123456789";

/** The lines of one machine. */
function linesOf(lines: LogLine[], machine: string): LogLine[] {
  return lines.filter((line) => line.machine === machine);
}

/** A machine pointing at a url, with served models given as the configuration resolves them. */
function machine(
  protocol: MachineConfig["protocol"],
  url: string | undefined,
  name: string,
  models: Record<string, string>,
  overrides: Partial<MachineConfig> = {},
): MachineConfig {
  const upstream = Object.fromEntries(Object.entries(models).filter(([id, engine]) => id !== engine));
  return fakeMachine(protocol, url ?? "", {
    name,
    models: Object.keys(models),
    upstream_names: upstream,
    ...(url === undefined ? { url: undefined } : {}),
    ...overrides,
  });
}

describe("the start-up check of machines", () => {
  const vllm = new FakeOpenAiServer({ models: ["google/gemma-3-27b-it"], apiKey: API_KEY });
  let closedUrl: string;

  beforeAll(async () => {
    await vllm.start();
    closedUrl = `http://127.0.0.1:${await freePort()}`;
  });
  afterAll(() => vllm.close());

  it("one machine missing a model, one down, one fine: one line each, naming what is wrong", async () => {
    const { log, lines, text } = capture();
    const machines = [
      machine("openai", vllm.url, "fine", { "gemma3.8-27b": "google/gemma-3-27b-it" }, { api_key: API_KEY }),
      // The operator: vLLM started with its Hugging Face name, Zona told the catalogue id.
      machine("openai", vllm.url, "misnamed", { "gemma3.8-27b": "gemma3.8-27b" }, { api_key: API_KEY }),
      machine("openai", closedUrl, "down", { "gemma3.8-27b": "google/gemma-3-27b-it" }),
    ];
    const checks = await checkMachines(machines, { timeoutMs: TIMEOUT_MS, log });

    expect(checks.map((check) => [check.machine, check.reachable, check.missing.length])).toEqual([
      ["fine", true, 0],
      ["misnamed", true, 1],
      ["down", false, 0],
    ]);
    expect(checks[0]?.served).toEqual(["google/gemma-3-27b-it"]);
    expect(checks[1]?.missing).toEqual([{ model: "gemma3.8-27b", upstream: "gemma3.8-27b" }]);

    const [fine, misnamed, down] = ["fine", "misnamed", "down"].map((name) => linesOf(lines, name));
    expect(fine).toHaveLength(1);
    expect(fine?.[0]).toMatchObject({ level: INFO, protocol: "openai", url: vllm.url });
    expect(misnamed).toHaveLength(1);
    expect(misnamed?.[0].level).toBe(WARN);
    expect(misnamed?.[0].msg).toContain("machine misnamed");
    expect(misnamed?.[0].msg).toContain('gemma3.8-27b (looked for "gemma3.8-27b")');
    expect(misnamed?.[0].msg).toContain("it lists: google/gemma-3-27b-it");
    expect(down).toHaveLength(1);
    expect(down?.[0].level).toBe(WARN);
    expect(down?.[0].msg).toContain(`machine down (openai at ${closedUrl}) is unreachable`);
    expect(down?.[0].error).toContain("ECONNREFUSED");
    expect(lines).toHaveLength(3);
    expect(text()).not.toContain(API_KEY);
    expect(vllm.requestsTo("/v1/models").map((r) => r.headers.authorization)).toEqual([
      `Bearer ${API_KEY}`,
      `Bearer ${API_KEY}`,
    ]);
  });

  it("a machine whose api_key the engine refuses is reported with the engine's answer, not the key", async () => {
    const { log, lines, text } = capture();
    const wrong = "sk-wrong-key-9876543210";
    const [check] = await checkMachines(
      [
        machine(
          "openai",
          vllm.url,
          "locked",
          { "gemma3.8-27b": "google/gemma-3-27b-it" },
          { api_key: wrong },
        ),
      ],
      { timeoutMs: TIMEOUT_MS, log },
    );
    expect(check).toMatchObject({ reachable: true, served: null, missing: [] });
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe(WARN);
    expect(lines[0].msg).toContain("could not be checked: GET /v1/models: the upstream answered 401");
    expect(text()).not.toContain(wrong);
  });

  it("a machine declared with the wrong protocol is reported with what was asked", async () => {
    const tei = new FakeTeiServer({ models: ["BAAI/bge-m3"] });
    await tei.start();
    try {
      const { log, lines } = capture();
      const [check] = await checkMachines(
        [machine("openai", tei.url, "not-vllm", { "bge-m3": "BAAI/bge-m3" })],
        {
          timeoutMs: TIMEOUT_MS,
          log,
        },
      );
      expect(check).toMatchObject({ reachable: true, served: null, missing: [] });
      expect(lines).toHaveLength(1);
      expect(lines[0].level).toBe(WARN);
      expect(lines[0].msg).toContain("could not be checked: GET /v1/models: the upstream answered 404");
    } finally {
      await tei.close();
    }
  });

  it("a url with a user and password is logged without them", async () => {
    const { log, lines, text } = capture();
    const url = closedUrl.replace("http://", "http://zona:hunter2@");
    await checkMachines([machine("openai", url, "with-user", {})], { timeoutMs: TIMEOUT_MS, log });
    expect(lines[0].url).toBe(closedUrl);
    expect(text()).not.toContain("hunter2");
  });

  it("long listings are cut in the warning", async () => {
    const many = new FakeOpenAiServer({
      models: Array.from({ length: 60 }, (_, i) => `org/model-number-${i}`),
    });
    await many.start();
    try {
      const { log, lines } = capture();
      await checkMachines([machine("openai", many.url, "many", { "chat-1": "org/other" })], {
        timeoutMs: TIMEOUT_MS,
        log,
      });
      expect(lines[0].msg).toMatch(/org\/model-number-0, .* … \(\d+ more\)$/);
      expect(lines[0].msg.length).toBeLessThan(400);
    } finally {
      await many.close();
    }
  });
});

describe("what each protocol is asked and how its names are matched", () => {
  const openai = new FakeOpenAiServer({
    models: ["Tongyi-MAI/Z-Image-Turbo", "Wan-AI/Wan2.2-TI2V-5B-Diffusers"],
  });
  const ollama = new FakeOllamaServer({ models: ["gemma3:4b", "bge-m3:latest"] });
  const tei = new FakeTeiServer({ models: ["BAAI/bge-m3"] });
  const speaches = new FakeWhisperServer({ models: ["Systran/faster-whisper-large-v3"] });
  const whisperCpp = new FakeWhisperServer({ style: "whisper.cpp" });
  const piper = new FakePiperServer({
    models: Object.values(PIPER_VOICES).filter((v) => !v.startsWith("en_US-amy")),
  });
  const guardListing = new FakeModerationServer({ models: ["meta-llama/Llama-Guard-3-1B"] });
  const guardPlain = new FakeModerationServer();
  const fakes = [openai, ollama, tei, speaches, whisperCpp, piper, guardListing, guardPlain];
  let checks: MachineCheck[];
  let lines: LogLine[];

  beforeAll(async () => {
    await Promise.all(fakes.map((fake) => fake.start()));
    const captured = capture();
    checks = await checkMachines(
      [
        machine("images", openai.url, "images", { "z-image-turbo": "Tongyi-MAI/Z-Image-Turbo" }),
        machine("videos", openai.url, "videos", { "wan-2.2-5b-fast": "Wan-AI/Wan2.2-TI2V-5B-Diffusers" }),
        // A name without a tag is Ollama's `:latest`; a tag must match.
        machine("ollama", ollama.url, "ollama-tags", { "bge-m3": "bge-m3", "gemma3.8-4b": "gemma3:4b" }),
        machine("ollama", ollama.url, "ollama-wrong-tag", { "gemma3.8-27b": "gemma3:27b" }),
        // TEI is sent no name: its Hugging Face id also matches a plain one.
        machine("tei", tei.url, "tei-plain", { "bge-m3": "bge-m3" }),
        machine("tei", tei.url, "tei-two", {
          "bge-m3": "BAAI/bge-m3",
          "bge-reranker-v2-m3": "BAAI/bge-reranker-v2-m3",
        }),
        machine("whisper", speaches.url, "speaches", { "asr-1": "Systran/faster-whisper-large-v3" }),
        machine("whisper", speaches.url, "speaches-missing", {
          "asr-1-hd": "Systran/faster-whisper-large-v2",
        }),
        machine("whisper", whisperCpp.url, "whisper-cpp", { "asr-1": "asr-1" }),
        machine("piper", piper.url, "piper", { "tts-1": "tts-1" }),
        machine("moderation", guardListing.url, "guard-listing", { guard: "meta-llama/Llama-Guard-3-1B" }),
        machine("moderation", guardPlain.url, "guard-plain", {}),
        machine("espeak", undefined, "builtin", { "tts-1": "tts-1" }),
      ],
      { timeoutMs: TIMEOUT_MS, log: captured.log },
    );
    lines = captured.lines;
  });
  afterAll(() => Promise.all(fakes.map((fake) => fake.close())));

  const find = (name: string) => checks.find((check) => check.machine === name);

  it.each([
    ["images", "GET /v1/models", true, ["Tongyi-MAI/Z-Image-Turbo", "Wan-AI/Wan2.2-TI2V-5B-Diffusers"], []],
    ["videos", "GET /v1/models", true, ["Tongyi-MAI/Z-Image-Turbo", "Wan-AI/Wan2.2-TI2V-5B-Diffusers"], []],
    ["ollama-tags", "GET /api/tags", true, ["gemma3:4b", "bge-m3:latest"], []],
    ["ollama-wrong-tag", "GET /api/tags", true, ["gemma3:4b", "bge-m3:latest"], ["gemma3:27b"]],
    ["tei-plain", "GET /info", true, ["BAAI/bge-m3"], []],
    ["tei-two", "GET /info (one model per TEI)", true, ["BAAI/bge-m3"], ["BAAI/bge-reranker-v2-m3"]],
    ["speaches", "GET /v1/models", true, ["Systran/faster-whisper-large-v3"], []],
    [
      "speaches-missing",
      "GET /v1/models",
      true,
      ["Systran/faster-whisper-large-v3"],
      ["Systran/faster-whisper-large-v2"],
    ],
    ["whisper-cpp", "no listing (404): reachable is enough", true, null, []],
    ["guard-listing", "GET /v1/models", true, ["meta-llama/Llama-Guard-3-1B"], []],
    ["guard-plain", "no listing (404): reachable is enough", true, null, []],
    ["builtin", "nothing (built in)", true, null, []],
  ])("%s: %s", (name, _asked, reachable, served, missing) => {
    const check = find(name);
    expect(check?.reachable).toBe(reachable);
    expect(check?.served).toEqual(served);
    expect(check?.missing.map((m) => m.upstream)).toEqual(missing);
    const own = linesOf(lines, name);
    expect(own).toHaveLength(1);
    expect(own[0].level).toBe(missing.length > 0 ? WARN : INFO);
    for (const upstream of missing) expect(own[0].msg).toContain(`"${upstream}"`);
  });

  it("piper: the voice models of engines.piper_voices that the server has not downloaded", () => {
    const check = find("piper");
    expect(check?.missing).toEqual([{ model: "tts-1", upstream: "en_US-amy-medium", voice: "amy" }]);
    const own = linesOf(lines, "piper");
    expect(own).toHaveLength(1);
    expect(own[0].level).toBe(WARN);
    expect(own[0].msg).toContain('voice amy of tts-1 (voice model "en_US-amy-medium")');
    expect(piper.requestsTo("/voices")).toHaveLength(1);
  });

  it("piper: the configured voice models are the ones looked for", async () => {
    const { log, lines: own } = capture();
    const voices = { ...PIPER_VOICES, amy: "it_IT-paola-medium" };
    const [check] = await checkMachines(
      [machine("piper", piper.url, "piper-configured", { "tts-1": "tts-1" })],
      {
        timeoutMs: TIMEOUT_MS,
        log,
        piperVoices: voices,
      },
    );
    expect(check?.missing).toEqual([]);
    expect(own[0].level).toBe(INFO);
  });

  it("every machine gets exactly one line, the whole check at once", () => {
    expect(lines).toHaveLength(checks.length);
    expect(new Set(lines.map((line) => line.machine)).size).toBe(checks.length);
  });
});

describe("the example configuration", () => {
  it("starts, and its check finds only unreachable machines (pointed at a closed loopback port here)", async () => {
    const config = loadConfig({ ZONA_CONFIG: join(import.meta.dirname, "../../zona.example.yaml") });
    const closed = `http://127.0.0.1:${await freePort()}`;
    const machines = config.machines.map((m) => (m.url === undefined ? m : { ...m, url: closed }));
    const { log, lines } = capture();
    const checks = await checkMachines(machines, {
      timeoutMs: TIMEOUT_MS,
      log,
      piperVoices: config.engines.piper_voices,
    });
    const declared = checks.filter((check) => check.url !== undefined);
    expect(declared.length).toBeGreaterThan(5);
    for (const check of declared) {
      expect(check.reachable, check.machine).toBe(false);
      expect(linesOf(lines, check.machine), check.machine).toHaveLength(1);
    }
    expect(lines.filter((line) => line.level === WARN)).toHaveLength(declared.length);
    expect(
      lines.filter((line) => line.level === WARN).every((line) => line.msg.includes("is unreachable")),
    ).toBe(true);
    // The example shows upstream names: a vLLM with its Hugging Face name, an Ollama with its tag.
    const names = config.machines.flatMap((m) => Object.values(m.upstream_names));
    expect(names).toContain("google/gemma-3-27b-it");
    expect(names.some((name) => /^[a-z0-9.]+:[a-z0-9.]+$/.test(name))).toBe(true);
  });
});
