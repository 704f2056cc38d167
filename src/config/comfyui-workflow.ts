/**
 * ComfyUI workflows in API format (ComfyUI's "Export (API)"): an object of nodes by id, each with
 * its `class_type` and `inputs`. Loaded from the machine's `workflow` file, checked against its
 * `workflow_inputs` map, and filled with a request's values.
 */
import { readFileSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";

/** One node of a workflow in API format. */
export interface WorkflowNode {
  class_type: string;
  inputs: Record<string, unknown>;
  [other: string]: unknown;
}

/** A workflow in API format: nodes by id. */
export type ComfyWorkflow = Record<string, WorkflowNode>;

/** Where a request's values go: `<node id>.<input name>` each (the machine's `workflow_inputs`). */
export interface WorkflowInputs {
  prompt: string;
  width?: string | undefined;
  height?: string | undefined;
  seed?: string | undefined;
}

/** The values of one picture. */
export interface WorkflowValues {
  prompt: string;
  width: number;
  height: number;
  seed: number;
}

/** A problem with a machine's workflow, naming the machine field to fix (`workflow`, `workflow_inputs.seed`). */
export interface WorkflowIssue {
  field: string;
  message: string;
}

/** A workflow file that cannot be used. */
export class WorkflowError extends Error {
  override name = "WorkflowError";
}

/** Parses a workflow in API format; the UI format (with `nodes` and `links`) is refused with a hint. */
export function parseWorkflow(text: string): ComfyWorkflow {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new WorkflowError(`is not valid JSON (${(error as Error).message})`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new WorkflowError("must be a JSON object of nodes (ComfyUI's API format)");
  }
  const record = raw as Record<string, unknown>;
  if (Array.isArray(record.nodes) && Array.isArray(record.links)) {
    throw new WorkflowError('is in ComfyUI\'s UI format; export it with "Export (API)" instead');
  }
  const ids = Object.keys(record);
  if (ids.length === 0) throw new WorkflowError("has no nodes");
  for (const id of ids) {
    const node = record[id];
    const ok =
      typeof node === "object" &&
      node !== null &&
      typeof (node as WorkflowNode).class_type === "string" &&
      typeof (node as WorkflowNode).inputs === "object" &&
      (node as WorkflowNode).inputs !== null;
    if (!ok) throw new WorkflowError(`node ${id} has no class_type and inputs (not ComfyUI's API format)`);
  }
  return record as ComfyWorkflow;
}

const TARGETS = ["prompt", "width", "height", "seed"] as const;

/**
 * The problems of a workflow's input map: each target must name an existing node and one of its
 * inputs that holds a value (not a link to another node's output); the prompt's a text.
 */
export function checkWorkflowInputs(workflow: ComfyWorkflow, inputs: WorkflowInputs): WorkflowIssue[] {
  const issues: WorkflowIssue[] = [];
  for (const target of TARGETS) {
    const ref = inputs[target];
    if (ref === undefined) continue;
    const field = `workflow_inputs.${target}`;
    const [nodeId = "", input = ""] = splitRef(ref);
    const node = Object.hasOwn(workflow, nodeId) ? workflow[nodeId] : undefined;
    if (node === undefined) {
      issues.push({ field, message: `names node ${nodeId}, which is not in the workflow` });
      continue;
    }
    if (!Object.hasOwn(node.inputs, input)) {
      const known = Object.keys(node.inputs).join(", ") || "none";
      issues.push({
        field,
        message: `names input ${input} of node ${nodeId} (${node.class_type}), which has no such input (inputs: ${known})`,
      });
      continue;
    }
    const value = node.inputs[input];
    if (Array.isArray(value)) {
      issues.push({
        field,
        message: `names input ${input} of node ${nodeId} (${node.class_type}), which is linked to another node; name the node that holds the value`,
      });
    } else if (target === "prompt" ? typeof value !== "string" : typeof value !== "number") {
      issues.push({
        field,
        message: `names input ${input} of node ${nodeId} (${node.class_type}), which holds a ${typeof value}, not a ${target === "prompt" ? "text" : "number"}`,
      });
    }
  }
  return issues;
}

/**
 * Checks a machine's workflow file at configuration load: it exists, is a workflow in API format,
 * and every target of `inputs` exists in it. Returns the problems, each naming the field to fix.
 */
export function checkWorkflowFile(path: string, inputs: WorkflowInputs | undefined): WorkflowIssue[] {
  let workflow: ComfyWorkflow;
  try {
    workflow = parseWorkflow(readFileSync(path, "utf8"));
    cache.set(path, { mtimeMs: statSync(path).mtimeMs, workflow });
  } catch (error) {
    const message =
      error instanceof WorkflowError
        ? `${path} ${error.message}`
        : (error as NodeJS.ErrnoException).code === "ENOENT"
          ? `file not found: ${path}`
          : `cannot be read: ${path} (${(error as Error).message})`;
    return [{ field: "workflow", message }];
  }
  return inputs === undefined ? [] : checkWorkflowInputs(workflow, inputs);
}

const cache = new Map<string, { mtimeMs: number; workflow: ComfyWorkflow }>();

/** The workflow of a file, parsed once per path (and again when the file changes). */
export async function loadWorkflow(path: string): Promise<ComfyWorkflow> {
  const { mtimeMs } = await stat(path);
  const cached = cache.get(path);
  if (cached !== undefined && cached.mtimeMs === mtimeMs) return cached.workflow;
  const workflow = parseWorkflow(await readFile(path, "utf8"));
  cache.set(path, { mtimeMs, workflow });
  return workflow;
}

/** A copy of the workflow with the picture's values at their mapped inputs (the loaded one is shared). */
export function fillWorkflow(
  workflow: ComfyWorkflow,
  inputs: WorkflowInputs,
  values: WorkflowValues,
): ComfyWorkflow {
  const filled = structuredClone(workflow);
  for (const target of TARGETS) {
    const ref = inputs[target];
    if (ref === undefined) continue;
    const [nodeId = "", input = ""] = splitRef(ref);
    const node = filled[nodeId];
    if (node === undefined)
      throw new WorkflowError(`workflow_inputs.${target}: node ${nodeId} is not in the workflow`);
    node.inputs[input] = values[target];
  }
  return filled;
}

/** `<node id>.<input name>`: node ids may not hold dots, input names never do. */
function splitRef(ref: string): [string, string] {
  const dot = ref.lastIndexOf(".");
  return [ref.slice(0, dot), ref.slice(dot + 1)];
}
