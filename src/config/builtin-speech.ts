import type { Config, MachineSettings } from "./schema.ts";

/** The zone of the built-in speech engine when the installation has no fallback zone. */
export const BUILTIN_SPEECH_ZONE = "builtin";
/** The name of the built-in speech machine. */
export const BUILTIN_SPEECH_MACHINE = "builtin-espeak";
/** The catalogue model speech runs on. */
const SPEECH_MODEL = "tts-1";

/**
 * With `engines.builtin_speech` on and no `espeak` machine declared, the built-in espeak-ng engine
 * is always one of the speech machines (serving `tts-1`, which joins the catalogue if it is
 * missing), so that speech answers even when no speech server does; the speech service asks it
 * only after every declared speech machine failed, was down or had its circuit open.
 *
 * Where it sits decides which content check its texts get, so it never loosens one:
 * - with declared speech machines, it joins the zone where speech runs (the fallback zone when a
 *   declared machine serves `tts-1` there, else the zone of the first one that does), and the
 *   texts it reads have passed that zone's check like any other;
 * - without any, it is the only speech engine, in the fallback zone (or a zone of its own), and
 *   reads unchecked there unless that zone has a moderation machine or `content_checks` names it.
 */
export function withBuiltinSpeech(config: Config): Config {
  if (!config.engines.builtin_speech) return config;
  // A declared espeak machine is the same engine, placed by the operator: nothing to add.
  if (
    config.machines.some(
      (machine) => machine.protocol === "espeak" || machine.name === BUILTIN_SPEECH_MACHINE,
    )
  ) {
    return config;
  }
  const declared = config.machines.filter(
    (machine) => machine.protocol === "piper" && machine.models.includes(SPEECH_MODEL),
  );
  const fallback = config.installation.fallback_zone;
  const zone =
    declared.find((machine) => machine.zone === fallback)?.zone ??
    declared[0]?.zone ??
    fallback ??
    BUILTIN_SPEECH_ZONE;
  // A zone with a moderation machine keeps checking texts; only a zone without one reads them unchecked.
  const checked = config.machines.some(
    (machine) => machine.protocol === "moderation" && machine.zone === zone,
  );
  const unchecked = declared.length === 0 && !checked;
  const builtin: MachineSettings = {
    name: BUILTIN_SPEECH_MACHINE,
    zone,
    protocol: "espeak",
    models: [SPEECH_MODEL],
    upstream_names: {},
    capacity: 2,
  };
  return {
    ...config,
    installation: {
      ...config.installation,
      content_checks: unchecked
        ? { [zone]: "none", ...config.installation.content_checks }
        : config.installation.content_checks,
    },
    models: config.models.some((model) => model.id === SPEECH_MODEL)
      ? config.models
      : [
          ...config.models,
          {
            id: SPEECH_MODEL,
            kind: "tts",
            vision: false,
            local_server: false,
            on_request: false,
            created: 1_767_225_600,
            prices: { input_per_million_tokens: 0, output_per_million_tokens: 0 },
          },
        ],
    machines: [...config.machines, builtin],
  };
}

/** Whether a machine is the built-in speech engine added by `withBuiltinSpeech`. */
export function isBuiltinSpeech(machine: Pick<MachineSettings, "name" | "protocol">): boolean {
  return machine.name === BUILTIN_SPEECH_MACHINE && machine.protocol === "espeak";
}
