import { randomInt, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { fillWorkflow, loadWorkflow, WorkflowError } from "../../config/comfyui-workflow.ts";
import { quotingEngine } from "../engine-words.ts";
import type { UpstreamClient } from "../http/upstream-client.ts";
import { abortError } from "../http/upstream-errors.ts";
import { rootPath } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { type MachineConfig, UpstreamError } from "../types.ts";
import { DEFAULT_IMAGE_TIMEOUT_MS, type ImageAdapterOptions } from "./images-adapter.ts";
import { expectImage } from "./images-transforms.ts";
import { isPayload, type Payload, stringField } from "./payload.ts";

/** How often ComfyUI's history is asked whether the picture is made. */
export const COMFYUI_POLL_MS = 250;

/** The largest seed sent when the request has none (requests may give 0 to 2147483647). */
const MAX_SEED = 2_147_483_647;

/** A picture ComfyUI saved, as `/view` wants it named. */
interface SavedImage {
  filename: string;
  subfolder: string;
  type: string;
}

/** How the ComfyUI adapter waits. */
export interface ComfyUiAdapterOptions extends ImageAdapterOptions {
  /** Pause between two looks at the history. */
  pollMs?: number;
}

/**
 * The adapter for ComfyUI's own API: the machine's workflow is filled at its `workflow_inputs`
 * (prompt, width and height from the size, the seed, random when the request has none since
 * ComfyUI would otherwise reuse the workflow's fixed one), queued with `POST /prompt`, followed
 * with `GET /history/{id}` until it has outputs, and its first saved picture read with `GET /view`.
 * A picture not made in time is taken off ComfyUI's queue.
 */
export function createComfyUiAdapter(
  client: UpstreamClient,
  options: ComfyUiAdapterOptions = {},
): ProtocolAdapter<"comfyui"> {
  const timeoutMs = options.imageTimeoutMs ?? DEFAULT_IMAGE_TIMEOUT_MS;
  const pollMs = options.pollMs ?? COMFYUI_POLL_MS;
  return {
    images: {
      async generateImage(machine, call, signal) {
        const workflow = await machineWorkflow(machine);
        const [width = 1024, height = 1024] = call.size.split("x").map(Number);
        const inputs = machine.workflow_inputs;
        if (inputs === undefined)
          throw new UpstreamError("protocol", `machine ${machine.name} has no workflow_inputs`);
        const filled = fillWorkflow(workflow, inputs, {
          prompt: call.prompt,
          width,
          height,
          seed: call.seed ?? randomInt(0, MAX_SEED + 1),
        });
        const queued = await client.json({
          machine,
          path: rootPath(machine, "/prompt"),
          body: { prompt: filled, client_id: randomUUID() },
          signal,
        });
        const promptId = isPayload(queued) ? stringField(queued.prompt_id) : undefined;
        if (promptId === undefined)
          throw new UpstreamError("protocol", "ComfyUI queued the workflow without a prompt_id");
        let image: SavedImage;
        try {
          image = await waitForImage(client, machine, promptId, signal, timeoutMs, pollMs);
        } catch (error) {
          if (error instanceof UpstreamError && (error.kind === "timeout" || error.kind === "aborted")) {
            void cancel(client, machine, promptId);
          }
          throw error;
        }
        const query = new URLSearchParams({
          filename: image.filename,
          subfolder: image.subfolder,
          type: image.type,
        });
        const file = await client.binary(
          { machine, path: `${rootPath(machine, "/view")}?${query}`, signal },
          "image/png, image/*",
        );
        return expectImage(file.body, "ComfyUI");
      },
    },
  };
}

async function machineWorkflow(machine: MachineConfig) {
  if (machine.workflow === undefined)
    throw new UpstreamError("protocol", `machine ${machine.name} has no workflow`);
  try {
    return await loadWorkflow(machine.workflow);
  } catch (error) {
    const why = error instanceof WorkflowError ? error.message : "cannot be read";
    throw new UpstreamError("protocol", `the workflow of machine ${machine.name} ${why}`);
  }
}

/** Follows the history until the prompt has run; its first saved picture, or the failure ComfyUI reports. */
async function waitForImage(
  client: UpstreamClient,
  machine: MachineConfig,
  promptId: string,
  signal: AbortSignal,
  timeoutMs: number,
  pollMs: number,
): Promise<SavedImage> {
  const deadline = Date.now() + timeoutMs;
  const path = rootPath(machine, `/history/${encodeURIComponent(promptId)}`);
  for (;;) {
    const history = await client.json({ machine, path, signal });
    const entry = isPayload(history) ? history[promptId] : undefined;
    if (isPayload(entry)) {
      const found = historyResult(entry);
      if (found !== undefined) return found;
    }
    if (Date.now() + pollMs > deadline) {
      throw new UpstreamError(
        "timeout",
        `ComfyUI did not make the picture within ${Math.round(timeoutMs / 1000)} s`,
      );
    }
    try {
      await sleep(pollMs, undefined, { signal });
    } catch {
      throw abortError(signal);
    }
  }
}

/**
 * What a history entry says: the first saved picture when the prompt has run (undefined while it
 * has not); a failure when it failed or made no picture.
 */
export function historyResult(entry: Payload): SavedImage | undefined {
  const status = isPayload(entry.status) ? entry.status : undefined;
  if (status?.status_str === "error") {
    const { node, text } = executionError(status);
    const message = [node, text].filter((part) => part !== undefined && part !== "").join(": ");
    throw quotingEngine("status", "ComfyUI failed to run the workflow", message, { status: 500, type: node });
  }
  const outputs = isPayload(entry.outputs) ? entry.outputs : undefined;
  const images = Object.values(outputs ?? {}).flatMap((output) =>
    isPayload(output) && Array.isArray(output.images) ? output.images.filter(isSavedImage) : [],
  );
  // Preview nodes keep "temp" pictures; a saved one is the workflow's result.
  const image = images.find((candidate) => candidate.type === "output") ?? images[0];
  if (image !== undefined) return image;
  if (status?.completed === true || (outputs !== undefined && status === undefined)) {
    throw new UpstreamError("protocol", "ComfyUI ran the workflow but it saved no picture");
  }
  return undefined;
}

function isSavedImage(value: unknown): value is SavedImage {
  return (
    isPayload(value) &&
    typeof value.filename === "string" &&
    typeof (value.subfolder ?? "") === "string" &&
    typeof (value.type ?? "output") === "string"
  );
}

/** ComfyUI's message of a failed run (its `execution_error` event) and the node that failed. */
function executionError(status: Payload): { node?: string; text: string } {
  const messages = Array.isArray(status.messages) ? status.messages : [];
  for (const message of messages) {
    if (!Array.isArray(message) || message[0] !== "execution_error" || !isPayload(message[1])) continue;
    const data = message[1];
    const node = stringField(data.node_type) ?? stringField(data.node_id);
    return { ...(node ? { node } : {}), text: stringField(data.exception_message) ?? "" };
  }
  return { text: "" };
}

/** Takes a prompt off ComfyUI's queue, or stops it when it runs; best effort, never throws. */
async function cancel(client: UpstreamClient, machine: MachineConfig, promptId: string): Promise<void> {
  const signal = AbortSignal.timeout(2_000);
  await Promise.allSettled([
    client.json({ machine, path: rootPath(machine, "/queue"), body: { delete: [promptId] }, signal }),
    client.json({ machine, path: rootPath(machine, "/interrupt"), body: { prompt_id: promptId }, signal }),
  ]);
}
