import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.ts";
import { PROTOCOLS } from "../../src/config/schema.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

describe("zona.example.yaml", () => {
  const config = loadConfig({ ZONA_CONFIG: "zona.example.yaml" }, REPO);

  it("validates against the schema through loadConfig", () => {
    expect(config.installation.zones.map((zone) => zone.id)).toEqual(["ch-ti", "ch-zh"]);
    expect(config.installation.fallback_zone).toBeDefined();
  });

  it("declares the catalogue of the spec, a chat model first", () => {
    const ids = config.models.map((model) => model.id);
    expect(ids[0]).toBe("gemma3.8-27b");
    expect(ids).toEqual(
      expect.arrayContaining(["gemma3.8-27b", "bge-m3", "bge-reranker-v2-m3", "asr-1", "asr-1-hd", "tts-1"]),
    );
  });

  it("has machines speaking openai, ollama, tei, whisper and piper", () => {
    const protocols = new Set(config.machines.map((machine) => machine.protocol));
    for (const protocol of ["openai", "ollama", "tei", "whisper", "piper"] as const) {
      expect(protocols).toContain(protocol);
    }
    expect([...protocols].every((protocol) => PROTOCOLS.includes(protocol))).toBe(true);
  });

  it("keeps secrets out: no admin_token and no machine api_key", () => {
    expect(config.server.admin_token).toBeUndefined();
    expect(config.machines.filter((machine) => machine.api_key !== undefined)).toEqual([]);
  });

  it("sets every server option to its default, so copying it changes nothing about how Zona listens", () => {
    expect(config.server).toEqual(loadConfig({}, tmpdir()).server);
  });
});

describe("loadConfig: files and environment", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-config-"));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("without a file and with an empty environment, every option has its default", () => {
    const config = loadConfig({}, dir);
    expect(config.server).toEqual({
      port: 8080,
      host: "0.0.0.0",
      data_dir: "./data",
      trust_proxy: false,
      log_level: "info",
      shutdown_grace_seconds: 30,
      job_crash_limit: 2,
      redis_prefix: "zona",
      cors_origins: [],
      metrics_host: "127.0.0.1",
    });
    expect(config.installation).toEqual({
      name: "Zona",
      language: "it",
      currency: "CHF",
      prepaid: false,
      owned_by: "zona",
      zones: [],
      default_tier: "slow",
      trusted_networks: [],
      // The built-in speech engine's zone reads texts unchecked (config/builtin-speech.ts).
      content_checks: { builtin: "none" },
    });
    expect(config.rate_limits).toEqual({ redis_timeout_ms: 100, endpoint_limits: {} });
    expect(config.tiers).toEqual({
      slow: { multiplier: 1, requests_per_minute: 60 },
      medium: { multiplier: 2, requests_per_minute: 120 },
      fast: { multiplier: 4, requests_per_minute: 300 },
      ludicrous: { multiplier: 8, requests_per_minute: 600 },
    });
    expect(config.prices).toEqual({
      transcription_per_second: 0,
      speech_per_character: 0,
      image_per_picture: 0,
      video_per_second: 0,
    });
    expect(config.engines).toEqual({
      connect_timeout_ms: 2_000,
      first_byte_timeout_ms: 60_000,
      idle_timeout_ms: 120_000,
      transcription_timeout_seconds: 300,
      image_timeout_seconds: 180,
      video_poll_interval_seconds: 5,
      video_queue_timeout_seconds: 3_600,
      video_run_timeout_seconds: 1_800,
      video_status_unreadable_seconds: 120,
      zone_transcription_timeout_seconds: 120,
      circuit_cooldown_seconds: 5,
      circuit_max_cooldown_seconds: 60,
      probe_interval_seconds: 10,
      probe_timeout_ms: 2_000,
      piper_voices: {
        paola: "it_IT-paola-medium",
        riccardo: "it_IT-riccardo-x_low",
        amy: "en_US-amy-medium",
        ryan: "en_US-ryan-high",
        thorsten: "de_DE-thorsten-medium",
        siwis: "fr_FR-siwis-medium",
      },
      builtin_speech: true,
    });
    // The embedded default speaks: the built-in espeak-ng engine serves tts-1.
    expect(config.models.map((model) => model.id)).toEqual(["tts-1"]);
    expect(config.machines).toEqual([
      {
        name: "builtin-espeak",
        zone: "builtin",
        protocol: "espeak",
        models: ["tts-1"],
        upstream_names: {},
        capacity: 2,
      },
    ]);
  });

  it("a model gets the defaults of its optional fields", async () => {
    await writeFile(join(dir, "zona.yaml"), "models:\n  - id: asr-1\n    kind: asr\n");
    expect(loadConfig({}, dir).models.filter((model) => model.id === "asr-1")).toEqual([
      {
        id: "asr-1",
        kind: "asr",
        vision: false,
        local_server: false,
        on_request: false,
        created: 1_767_225_600,
        prices: { input_per_million_tokens: 0, output_per_million_tokens: 0 },
      },
    ]);
  });

  it("a machine gets the defaults of its optional fields", async () => {
    await writeFile(
      join(dir, "zona.yaml"),
      "installation:\n  zones: [{ id: ch-ti }]\nmachines:\n  - { name: m1, zone: ch-ti, protocol: espeak }\n",
    );
    expect(loadConfig({}, dir).machines).toEqual([
      { name: "m1", zone: "ch-ti", protocol: "espeak", models: [], upstream_names: {}, capacity: 1 },
    ]);
  });

  it("reads zona.yaml from the working directory when ZONA_CONFIG is unset", async () => {
    await writeFile(join(dir, "zona.yaml"), "installation:\n  currency: credits\n");
    expect(loadConfig({}, dir).installation.currency).toBe("credits");
  });

  it("ZONA_CONFIG, relative to the working directory, wins over zona.yaml", async () => {
    await writeFile(join(dir, "zona.yaml"), "installation:\n  language: de\n");
    await writeFile(join(dir, "other.yaml"), "installation:\n  language: fr\n");
    expect(loadConfig({ ZONA_CONFIG: "other.yaml" }, dir).installation.language).toBe("fr");
  });

  it("an empty file is a valid configuration of defaults", async () => {
    await writeFile(join(dir, "zona.yaml"), "# nothing yet\n");
    expect(loadConfig({}, dir).server.port).toBe(8080);
  });

  it("environment variables override the server section of the file", async () => {
    await writeFile(
      join(dir, "zona.yaml"),
      [
        "server:",
        "  port: 9000",
        "  host: 127.0.0.1",
        "  data_dir: /srv/from-file",
        "  database_url: postgresql://file@db/zona",
        "  redis_url: redis://file:6379",
        "  admin_token: token-from-the-file-0123",
        "  log_level: warn",
        "  trust_proxy: true",
        "installation:",
        "  currency: credits",
      ].join("\n"),
    );
    const config = loadConfig(
      {
        PORT: "9100",
        HOST: "::1",
        ZONA_DATA_DIR: "/srv/from-env",
        DATABASE_URL: "postgres://env@db/zona",
        REDIS_URL: "rediss://env:6380",
        ZONA_ADMIN_TOKEN: "token-from-the-env-4567",
        ZONA_LOG_LEVEL: "debug",
      },
      dir,
    );
    expect(config.server).toEqual({
      port: 9100,
      host: "::1",
      data_dir: "/srv/from-env",
      database_url: "postgres://env@db/zona",
      redis_url: "rediss://env:6380",
      admin_token: "token-from-the-env-4567",
      log_level: "debug",
      trust_proxy: true,
      shutdown_grace_seconds: 30,
      job_crash_limit: 2,
      redis_prefix: "zona",
      cors_origins: [],
      metrics_host: "127.0.0.1",
    });
    expect(config.installation.currency).toBe("credits");
  });

  it("an environment variable that is set but empty does not override the file", async () => {
    await writeFile(join(dir, "zona.yaml"), "server:\n  port: 9000\n  host: 127.0.0.1\n");
    const config = loadConfig({ PORT: "", HOST: "", ZONA_ADMIN_TOKEN: "" }, dir);
    expect(config.server.port).toBe(9000);
    expect(config.server.host).toBe("127.0.0.1");
    expect(config.server.admin_token).toBeUndefined();
  });

  it("environment variables alone configure the server without any file", () => {
    const config = loadConfig({ PORT: "0", ZONA_DATA_DIR: "/var/lib/zona" }, dir);
    expect(config.server.port).toBe(0);
    expect(config.server.data_dir).toBe("/var/lib/zona");
  });
});
