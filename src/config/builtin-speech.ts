import type { Config } from "./schema.ts";

/** The zone of the built-in speech engine when the installation has no fallback zone. */
export const BUILTIN_SPEECH_ZONE = "builtin";
/** The name of the built-in speech machine. */
export const BUILTIN_SPEECH_MACHINE = "builtin-espeak";

/**
 * The embedded default speaks: when the configuration declares no speech machine (`piper` or
 * `espeak`) and `engines.builtin_speech` is on, the built-in espeak-ng engine serves `tts-1` in the
 * fallback zone (or a zone of its own), and `tts-1` joins the catalogue if it is missing. Texts are
 * read there without a content check unless that zone has a moderation machine or
 * `installation.content_checks` names it.
 */
export function withBuiltinSpeech(config: Config): Config {
  if (!config.engines.builtin_speech) return config;
  if (config.machines.some((machine) => machine.protocol === "piper" || machine.protocol === "espeak")) {
    return config;
  }
  const zone = config.installation.fallback_zone ?? BUILTIN_SPEECH_ZONE;
  const hasModel = config.models.some((model) => model.id === "tts-1");
  // A zone with a moderation machine keeps checking texts; only a zone without one reads them unchecked.
  const checked = config.machines.some(
    (machine) => machine.protocol === "moderation" && machine.zone === zone,
  );
  return {
    ...config,
    installation: {
      ...config.installation,
      content_checks: checked
        ? config.installation.content_checks
        : { [zone]: "none", ...config.installation.content_checks },
    },
    models: hasModel
      ? config.models
      : [
          ...config.models,
          {
            id: "tts-1",
            kind: "tts",
            vision: false,
            local_server: false,
            on_request: false,
            created: 1_767_225_600,
            prices: { input_per_million_tokens: 0, output_per_million_tokens: 0 },
          },
        ],
    machines: [
      ...config.machines,
      {
        name: BUILTIN_SPEECH_MACHINE,
        zone,
        protocol: "espeak",
        models: ["tts-1"],
        upstream_names: {},
        capacity: 2,
      },
    ],
  };
}
