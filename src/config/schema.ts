import { isIP } from "node:net";
import { z } from "zod";
import { checkComfyUiMachine, machineSchema } from "./machine-schema.ts";
import { ENDPOINT_NAMES, LANGUAGES, MODEL_KINDS, slug, TIER_NAMES } from "./names.ts";

export { ENDPOINT_NAMES, LANGUAGES, MODEL_KINDS, PROTOCOLS, TIER_NAMES } from "./names.ts";

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
  // Money held in Redis stores the model in tab- and line-separated text.
  id: z
    .string()
    .min(1)
    .max(128)
    .refine(
      (id) => ![...id].some((c) => c < " " || c === "\u007f"),
      "must not contain control characters (tab, line break...)",
    ),
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

/** The Piper voice model behind each own voice, by default (operators may run `-medium` or `-high` ones). */
export const PIPER_VOICE_DEFAULTS = {
  paola: "it_IT-paola-medium",
  riccardo: "it_IT-riccardo-x_low",
  amy: "en_US-amy-medium",
  ryan: "en_US-ryan-high",
  thorsten: "de_DE-thorsten-medium",
  siwis: "fr_FR-siwis-medium",
};
const voiceModel = z.string().min(1);

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
        /**
         * Runs of one background job that may end with its worker or process dead before the job is
         * failed with a reason and never run again (a poison job must not keep the service down).
         */
        job_crash_limit: z.number().int().min(1).max(100).default(2),
        /**
         * Prefix of every key Zona writes to Redis (rate-limit counters, job queues), so that two
         * installations can share one Redis server.
         */
        redis_prefix: z
          .string()
          .regex(/^[A-Za-z0-9:_.-]{1,64}$/, "must be 1 to 64 letters, digits, ':', '_', '.' or '-'")
          .default("zona"),
        /**
         * Origins (`https://chat.example.com`) whose browser pages may call the key API and the app
         * API; `*` allows every origin. Empty (the default): no CORS headers, preflights are 404.
         */
        cors_origins: z
          .array(
            z.union([
              z.literal("*"),
              z.string().regex(/^https?:\/\/[^/\s]+$/, "must be an origin such as https://chat.example.com"),
            ]),
          )
          .default([]),
        /**
         * Port of a second listener that serves only `GET /metrics` (Prometheus, no token), bound to
         * `metrics_host`. Without it the metrics are at `GET /admin/v1/metrics` behind the operator token.
         */
        metrics_port: z.number().int().min(0).max(65535).optional(),
        metrics_host: z.string().min(1).default("127.0.0.1"),
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
        /** Per-minute endpoint limits that differ from the built-in ones (ENDPOINT_LIMITS), by name. */
        endpoint_limits: z.partialRecord(z.enum(ENDPOINT_NAMES), z.number().int().positive()).default({}),
      })
      .prefault({}),
    engines: z
      .strictObject({
        connect_timeout_ms: z.number().int().positive().default(2_000),
        first_byte_timeout_ms: z.number().int().positive().default(60_000),
        idle_timeout_ms: z.number().int().positive().default(120_000),
        /** A transcription still running after this answers 504; by default at most 300 seconds. */
        transcription_timeout_seconds: z.number().positive().default(300),
        /** How long one picture may take on an image machine before the next machine is tried. */
        image_timeout_seconds: z.number().positive().default(180),
        /** How often a video job's engine is asked how far it is (and a queued job looks for a free machine). */
        video_poll_interval_seconds: z.number().positive().default(5),
        /** How long a video job may wait for a free machine before it fails. */
        video_queue_timeout_seconds: z.number().positive().default(3_600),
        /** How long a video job may run on its machine before it fails (and is cancelled there). */
        video_run_timeout_seconds: z.number().positive().default(1_800),
        /**
         * How long a running video job's state may stay unreadable (its machine refuses, hangs, or
         * errs without the job) before the job fails (and is cancelled there).
         */
        video_status_unreadable_seconds: z.number().positive().default(120),
        /**
         * How long a transcription waits for a machine of the key's zones before it moves on to the
         * fallback server; must leave the fallback room within
         * `transcription_timeout_seconds`. Default: 120, or half of `transcription_timeout_seconds`
         * when that is shorter.
         */
        zone_transcription_timeout_seconds: z.number().positive().optional(),
        /** First cool-down of a machine's circuit breaker after it fails; doubles while it keeps failing. */
        circuit_cooldown_seconds: z.number().positive().default(5),
        /** The longest cool-down of a machine's circuit breaker. */
        circuit_max_cooldown_seconds: z.number().positive().default(60),
        /** How often every machine is asked whether it is up. */
        probe_interval_seconds: z.number().positive().default(10),
        /** How long a probe waits for its answer. */
        probe_timeout_ms: z.number().int().positive().default(2_000),
        /** The Piper voice model behind each of the six own voices. */
        piper_voices: z
          .strictObject({
            paola: voiceModel.default(PIPER_VOICE_DEFAULTS.paola),
            riccardo: voiceModel.default(PIPER_VOICE_DEFAULTS.riccardo),
            amy: voiceModel.default(PIPER_VOICE_DEFAULTS.amy),
            ryan: voiceModel.default(PIPER_VOICE_DEFAULTS.ryan),
            thorsten: voiceModel.default(PIPER_VOICE_DEFAULTS.thorsten),
            siwis: voiceModel.default(PIPER_VOICE_DEFAULTS.siwis),
          })
          .prefault({}),
        /**
         * The built-in espeak-ng engine reads speech (`tts-1`) when no declared `piper` machine can
         * (or none is declared), so a fresh installation speaks out of the box (builtin-speech.ts).
         */
        builtin_speech: z.boolean().default(true),
      })
      .prefault({})
      .transform(({ zone_transcription_timeout_seconds: zone, ...engines }) => ({
        ...engines,
        zone_transcription_timeout_seconds: zone ?? Math.min(120, engines.transcription_timeout_seconds / 2),
      })),
    knowledge: z
      .strictObject({
        /**
         * Most memory one document's reading may take: each document is read in a process of its
         * own, stopped above this, and the document fails with the reason.
         */
        read_memory_mb: z.number().int().min(128).default(512),
        /** Longest one document's reading (text extraction and cutting into passages) may take. */
        read_timeout_seconds: z.number().positive().default(120),
        /** Documents read at the same time by this instance; the others wait their turn. */
        concurrent_reads: z.number().int().positive().default(1),
        /** Documents of one account read at the same time, across instances. */
        concurrent_reads_per_account: z.number().int().positive().default(1),
      })
      .prefault({}),
    billing: z
      .strictObject({
        reservation_timeout_seconds: z.number().int().positive().default(900),
      })
      .prefault({}),
    app: z
      .strictObject({
        /** Lifetime of an access token of the app API (default 24 hours). */
        access_token_seconds: z.number().int().positive().default(86_400),
        /** Lifetime of a refresh token (default 30 days). */
        refresh_token_seconds: z.number().int().positive().default(2_592_000),
        /** The label of a conversation created without `model` (only a label: each message names its model). */
        default_chat_label: z.string().min(1).max(128).default("gemma2.5:1.5b"),
        /**
         * Where users open the links of verification and password-reset mails (the web chat); unset,
         * the address Zona listens on (`PublicUrl`).
         */
        public_url: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
        web_chat: z
          .strictObject({
            /** Zona's own chat page at / (the mails link to it); false leaves / to the operator. */
            enabled: z.boolean().default(true),
          })
          .prefault({}),
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
    if (config.engines.zone_transcription_timeout_seconds >= config.engines.transcription_timeout_seconds) {
      ctx.addIssue({
        code: "custom",
        path: ["engines", "zone_transcription_timeout_seconds"],
        message:
          "must be shorter than engines.transcription_timeout_seconds, so the fallback server still has time",
      });
    }
    if (config.engines.circuit_max_cooldown_seconds < config.engines.circuit_cooldown_seconds) {
      ctx.addIssue({
        code: "custom",
        path: ["engines", "circuit_max_cooldown_seconds"],
        message: "must not be shorter than engines.circuit_cooldown_seconds",
      });
    }
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
      if (machine.protocol === "comfyui") checkComfyUiMachine(machine, i, ctx);
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
/** One machine of the configuration, with its served models resolved. */
export type MachineSettings = Config["machines"][number];
/** One tier name. */
export type TierName = (typeof TIER_NAMES)[number];
