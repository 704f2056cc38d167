import { isIP } from "node:net";
import { z } from "zod";

/** Languages the installation and accounts can speak (Romansh `rm` included). */
export const LANGUAGES = ["it", "en", "de", "fr", "rm"] as const;
/** Tier names, in the order of their speed. */
export const TIER_NAMES = ["slow", "medium", "fast", "ludicrous"] as const;
/** Endpoints with a per-key limit of their own (spec "Rate limits"); their limits may be changed. */
export const ENDPOINT_NAMES = [
  "chat_completions",
  "completions",
  "responses",
  "knowledge_base_ask",
  "embeddings",
  "rerank",
  "audio_transcriptions",
  "audio_speech",
  "image_generations",
  "video_create",
  "video_list",
  "video_retrieve",
  "video_content",
  "video_delete",
] as const;

/** Kinds of model in the catalogue. */
export const MODEL_KINDS = ["chat", "embedding", "rerank", "asr", "tts", "image", "video"] as const;
/** Upstream protocols an engine adapter can speak. */
export const PROTOCOLS = [
  "openai",
  "ollama",
  "tei",
  "whisper",
  "piper",
  "espeak",
  "moderation",
  "images",
  "videos",
] as const;

const slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "must be lower-case letters, digits, '-' or '_' (at most 63)");

const cidr = z.string().refine((value) => {
  const [address, bits, ...rest] = value.split("/");
  if (rest.length > 0 || address === undefined) return false;
  const family = isIP(address);
  if (family === 0) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return Number.isInteger(n) && n >= 0 && n <= (family === 4 ? 32 : 128);
}, "must be an IP address or a CIDR range such as 10.0.0.0/8");

const money = z.number().nonnegative();

const zoneSchema = z.strictObject({
  id: slug,
  name: z.string().min(1).optional(),
});

const tierSchema = z.strictObject({
  multiplier: z.number().positive(),
  requests_per_minute: z.number().int().positive(),
});

const modelSchema = z.strictObject({
  id: z.string().min(1).max(128),
  kind: z.enum(MODEL_KINDS),
  vision: z.boolean().default(false),
  local_server: z.boolean().default(false),
  on_request: z.boolean().default(false),
  created: z.number().int().nonnegative().default(1_767_225_600),
  prices: z
    .strictObject({
      input_per_million_tokens: money.default(0),
      output_per_million_tokens: money.default(0),
    })
    .default({ input_per_million_tokens: 0, output_per_million_tokens: 0 }),
});

const machineSchema = z.strictObject({
  name: slug,
  zone: slug,
  protocol: z.enum(PROTOCOLS),
  url: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
  api_key: z.string().min(1).optional(),
  models: z.array(z.string().min(1)).default([]),
  tiers: z.array(z.enum(TIER_NAMES)).optional(),
  family: z.string().min(1).optional(),
  capacity: z.number().int().positive().default(1),
});

const defaultTiers = {
  slow: { multiplier: 1, requests_per_minute: 60 },
  medium: { multiplier: 2, requests_per_minute: 120 },
  fast: { multiplier: 4, requests_per_minute: 300 },
  ludicrous: { multiplier: 8, requests_per_minute: 600 },
};

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        port: z.number().int().min(0).max(65535).default(8080),
        host: z.string().min(1).default("0.0.0.0"),
        data_dir: z.string().min(1).default("./data"),
        database_url: z
          .url({ protocol: /^postgres(ql)?$/, error: "must be a postgres:// or postgresql:// URL" })
          .optional(),
        redis_url: z.url({ protocol: /^rediss?$/, error: "must be a redis:// or rediss:// URL" }).optional(),
        admin_token: z.string().min(16, "must be at least 16 characters").optional(),
        trust_proxy: z.boolean().default(false),
        log_level: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
        shutdown_grace_seconds: z.number().positive().default(30),
      })
      .prefault({}),
    installation: z
      .strictObject({
        name: z.string().min(1).default("Zona"),
        language: z.enum(LANGUAGES).default("it"),
        currency: z.enum(["CHF", "credits"]).default("CHF"),
        prepaid: z.boolean().default(false),
        owned_by: z.string().min(1).default("zona"),
        zones: z.array(zoneSchema).default([]),
        fallback_zone: slug.optional(),
        default_tier: z.enum(TIER_NAMES).default("slow"),
        /**
         * The content check of texts read aloud (and later pictures), decided zone by zone: a zone
         * not listed needs a `moderation` machine in it; `none` reads texts unchecked there.
         */
        content_checks: z.record(slug, z.enum(["moderation", "none"])).default({}),
        trusted_networks: z.array(cidr).default([]),
      })
      .prefault({}),
    tiers: z
      .strictObject({
        slow: tierSchema.default(defaultTiers.slow),
        medium: tierSchema.default(defaultTiers.medium),
        fast: tierSchema.default(defaultTiers.fast),
        ludicrous: tierSchema.default(defaultTiers.ludicrous),
      })
      .prefault({}),
    prices: z
      .strictObject({
        transcription_per_second: money.default(0),
        speech_per_character: money.default(0),
        image_per_picture: money.default(0),
        video_per_second: money.default(0),
      })
      .prefault({}),
    rate_limits: z
      .strictObject({
        redis_timeout_ms: z.number().int().positive().default(100),
        /** Per-minute endpoint limits that differ from the spec's table, by endpoint name. */
        endpoint_limits: z.partialRecord(z.enum(ENDPOINT_NAMES), z.number().int().positive()).default({}),
      })
      .prefault({}),
    engines: z
      .strictObject({
        connect_timeout_ms: z.number().int().positive().default(2_000),
        first_byte_timeout_ms: z.number().int().positive().default(60_000),
        idle_timeout_ms: z.number().int().positive().default(120_000),
        /** A transcription still running after this answers 504 (spec "Limits": 300 seconds). */
        transcription_timeout_seconds: z.number().positive().default(300),
        /**
         * Without any `piper` or `espeak` machine in the file, the built-in espeak-ng engine reads
         * speech (`tts-1`), so a fresh installation speaks out of the box.
         */
        builtin_speech: z.boolean().default(true),
      })
      .prefault({}),
    billing: z
      .strictObject({
        reservation_timeout_seconds: z.number().int().positive().default(900),
      })
      .prefault({}),
    app: z
      .strictObject({
        /** Lifetime of an access token of the app API (spec default 24 hours). */
        access_token_seconds: z.number().int().positive().default(86_400),
        /** Lifetime of a refresh token (spec default 30 days). */
        refresh_token_seconds: z.number().int().positive().default(2_592_000),
        /** The label of a conversation created without `model` (only a label: each message names its model). */
        default_chat_label: z.string().min(1).max(128).default("gemma2.5:1.5b"),
        /** Where users open the links of verification and password-reset mails (the web chat). */
        public_url: z
          .url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" })
          .default("http://localhost:8080"),
        mail: z
          .strictObject({
            /** smtp:// or smtps:// URL of the mail server; without it mail waits in the outbox (`zona mail list`). */
            smtp_url: z.url({ protocol: /^smtps?$/, error: "must be an smtp:// or smtps:// URL" }).optional(),
            from: z.string().min(3).default("Zona <no-reply@localhost>"),
          })
          .prefault({}),
      })
      .prefault({}),
    models: z.array(modelSchema).default([]),
    machines: z.array(machineSchema).default([]),
  })
  .superRefine((config, ctx) => {
    const zoneIds = new Set<string>();
    config.installation.zones.forEach((zone, i) => {
      if (zoneIds.has(zone.id)) {
        ctx.addIssue({
          code: "custom",
          path: ["installation", "zones", i, "id"],
          message: "is declared twice",
        });
      }
      zoneIds.add(zone.id);
    });
    const placeable = new Set(zoneIds);
    if (config.installation.fallback_zone) placeable.add(config.installation.fallback_zone);
    for (const zone of Object.keys(config.installation.content_checks)) {
      if (!placeable.has(zone)) {
        ctx.addIssue({
          code: "custom",
          path: ["installation", "content_checks", zone],
          message: `is not a zone of the installation (known: ${[...placeable].join(", ") || "none"})`,
        });
      }
    }

    const modelIds = new Set<string>();
    config.models.forEach((model, i) => {
      if (modelIds.has(model.id)) {
        ctx.addIssue({ code: "custom", path: ["models", i, "id"], message: "is declared twice" });
      }
      modelIds.add(model.id);
    });

    const machineNames = new Set<string>();
    config.machines.forEach((machine, i) => {
      if (machineNames.has(machine.name)) {
        ctx.addIssue({ code: "custom", path: ["machines", i, "name"], message: "is declared twice" });
      }
      machineNames.add(machine.name);
      if (!placeable.has(machine.zone)) {
        ctx.addIssue({
          code: "custom",
          path: ["machines", i, "zone"],
          message: `is not a zone of the installation (known: ${[...placeable].join(", ") || "none"})`,
        });
      }
      if (machine.protocol !== "espeak" && !machine.url) {
        ctx.addIssue({
          code: "custom",
          path: ["machines", i, "url"],
          message: "is required for this protocol",
        });
      }
      machine.models.forEach((id, j) => {
        if (!modelIds.has(id)) {
          ctx.addIssue({
            code: "custom",
            path: ["machines", i, "models", j],
            message: `names a model that is not in the catalogue: ${id}`,
          });
        }
      });
    });
  });

/** The validated configuration of one Zona process. */
export type Config = z.infer<typeof configSchema>;
/** One model of the catalogue. */
export type ModelConfig = Config["models"][number];
/** One tier name. */
export type TierName = (typeof TIER_NAMES)[number];
