import { z } from "zod";
import { checkWorkflowFile } from "./comfyui-workflow.ts";
import { PROTOCOLS, slug, TIER_NAMES } from "./names.ts";

const workflowInput = z
  .string()
  .regex(/^[^.\s]+\.[A-Za-z0-9_]+$/, "must be <node id>.<input name>, such as 6.text");

/**
 * The models a machine serves, each as a catalogue id or with the name its engine knows it by:
 * `[gemma3.8-27b]`, `[{id: gemma3.8-27b, upstream: google/gemma-3-27b-it}]`, or a map
 * `{gemma3.8-27b: google/gemma-3-27b-it}`.
 */
const servedModels = z
  .union([
    z.array(
      z.union([z.string().min(1), z.strictObject({ id: z.string().min(1), upstream: z.string().min(1) })]),
    ),
    z.record(z.string().min(1), z.string().min(1)),
  ])
  .default([]);

/** One machine of `machines`. */
export const machineSchema = z
  .strictObject({
    name: slug,
    zone: slug,
    protocol: z.enum(PROTOCOLS),
    url: z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).optional(),
    api_key: z.string().min(1).optional(),
    models: servedModels,
    tiers: z.array(z.enum(TIER_NAMES)).optional(),
    family: z.string().min(1).optional(),
    capacity: z.number().int().positive().default(1),
    /** `comfyui` machines: the workflow in ComfyUI's API format (a JSON file's path). */
    workflow: z.string().min(1).optional(),
    /** `comfyui` machines: where the request's values go in the workflow, as `<node id>.<input name>`. */
    workflow_inputs: z
      .strictObject({
        prompt: workflowInput,
        width: workflowInput.optional(),
        height: workflowInput.optional(),
        seed: workflowInput.optional(),
      })
      .optional(),
  })
  .transform(({ models, ...machine }) => {
    const entries: Array<[string, string]> = Array.isArray(models)
      ? models.map((entry) => (typeof entry === "string" ? [entry, entry] : [entry.id, entry.upstream]))
      : Object.entries(models);
    return {
      ...machine,
      /** Catalogue ids served. */
      models: entries.map(([id]) => id),
      /** Catalogue id -> the engine's own name, only where the two differ. */
      upstream_names: Object.fromEntries(entries.filter(([id, upstream]) => id !== upstream)) as Record<
        string,
        string
      >,
    };
  });

/**
 * A `comfyui` machine needs its workflow (a readable file in ComfyUI's API format) and at least the
 * prompt's place in it; every mapped input must exist in the workflow.
 */
export function checkComfyUiMachine(
  machine: z.infer<typeof machineSchema>,
  i: number,
  ctx: z.RefinementCtx,
): void {
  const missing = (field: string, what: string) =>
    ctx.addIssue({
      code: "custom",
      path: ["machines", i, field],
      message: `is required for a comfyui machine: ${what}`,
    });
  if (machine.workflow === undefined)
    missing("workflow", 'the path of a workflow exported with "Export (API)"');
  if (machine.workflow_inputs === undefined)
    missing("workflow_inputs", "at least prompt, as <node id>.<input name>");
  if (machine.workflow === undefined) return;
  for (const issue of checkWorkflowFile(machine.workflow, machine.workflow_inputs)) {
    ctx.addIssue({
      code: "custom",
      path: ["machines", i, ...issue.field.split(".")],
      message: issue.message,
    });
  }
}
