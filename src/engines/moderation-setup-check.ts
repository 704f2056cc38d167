import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config/schema.ts";

/** What the content check of a zone guards, by the protocol of the machines that do that work there. */
const CHECKED_WORK: Record<string, string> = {
  piper: "speech",
  espeak: "speech",
  images: "pictures",
  comfyui: "pictures",
  videos: "videos",
};

/**
 * At start and after every reload: one warning per zone whose content check is on (listed as
 * `moderation` in `installation.content_checks`, or not listed) where speech, pictures or videos
 * are made but no machine checks texts (protocol `moderation`): every such request of that zone
 * answers 503 `moderation_unavailable` until one is added or the zone's check is set to `none`.
 * The zones it warned of.
 */
export function warnZonesWithoutModeration(config: Config, log: Pick<FastifyBaseLogger, "warn">): string[] {
  const checked = new Set(
    config.machines.filter((machine) => machine.protocol === "moderation").map((machine) => machine.zone),
  );
  const work = new Map<string, Set<string>>();
  for (const machine of config.machines) {
    const what = CHECKED_WORK[machine.protocol];
    if (what === undefined || checked.has(machine.zone)) continue;
    if ((config.installation.content_checks[machine.zone] ?? "moderation") !== "moderation") continue;
    const kinds = work.get(machine.zone) ?? new Set<string>();
    kinds.add(what);
    work.set(machine.zone, kinds);
  }
  for (const [zone, kinds] of work) {
    const answers = [...kinds];
    log.warn(
      { zone, answers_503: answers },
      `zone ${zone} checks content but has no moderation machine: its ${answers.join(", ")} ` +
        "requests answer 503 moderation_unavailable; add a machine with protocol moderation in that zone, or " +
        `set installation.content_checks.${zone}: none (docs/configuration.md)`,
    );
  }
  return [...work.keys()];
}
