import { randomUUID } from "node:crypto";
import { fakePicture } from "./fake-picture.ts";
import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
  takeKnobs,
} from "./fake-server.ts";

/** Knobs of the ComfyUI fake. */
export interface FakeComfyUiSettings {
  /** How long after `POST /prompt` the history holds the outputs. */
  historyDelayMs: number;
  /** The run fails: the history holds `status_str: "error"` with an `execution_error`. */
  failRun: boolean;
  /** `POST /prompt` is refused with 400 and `node_errors` (a model file that is not installed). */
  nodeErrors: boolean;
}

/** The defaults of the ComfyUI knobs. */
export const DEFAULT_COMFYUI_SETTINGS: FakeComfyUiSettings = {
  historyDelayMs: 300,
  failRun: false,
  nodeErrors: false,
};
const COMFYUI_KEYS = Object.keys(DEFAULT_COMFYUI_SETTINGS) as Array<keyof FakeComfyUiSettings>;

/** A Z-Image Turbo text-to-image workflow in ComfyUI's API format, as "Export (API)" writes it. */
export function fakeComfyWorkflow(): Record<string, { class_type: string; inputs: Record<string, unknown> }> {
  return {
    "1": {
      class_type: "UNETLoader",
      inputs: { unet_name: "z_image_turbo_bf16.safetensors", weight_dtype: "default" },
    },
    "2": {
      class_type: "CLIPLoader",
      inputs: { clip_name: "qwen_3_4b.safetensors", type: "lumina2", device: "default" },
    },
    "10": { class_type: "VAELoader", inputs: { vae_name: "ae.safetensors" } },
    "4": { class_type: "ModelSamplingAuraFlow", inputs: { shift: 3, model: ["1", 0] } },
    "6": { class_type: "CLIPTextEncode", inputs: { text: "a lighthouse at dusk", clip: ["2", 0] } },
    "7": { class_type: "ConditioningZeroOut", inputs: { conditioning: ["6", 0] } },
    "13": { class_type: "EmptySD3LatentImage", inputs: { width: 1024, height: 1024, batch_size: 1 } },
    "3": {
      class_type: "KSampler",
      inputs: {
        seed: 42,
        steps: 8,
        cfg: 1,
        sampler_name: "res_multistep",
        scheduler: "simple",
        denoise: 1,
        model: ["4", 0],
        positive: ["6", 0],
        negative: ["7", 0],
        latent_image: ["13", 0],
      },
    },
    "8": { class_type: "VAEDecode", inputs: { samples: ["3", 0], vae: ["10", 0] } },
    "9": { class_type: "SaveImage", inputs: { filename_prefix: "z-image", images: ["8", 0] } },
  };
}

/** Where the values go in fakeComfyWorkflow(), as a machine's `workflow_inputs`. */
export const FAKE_COMFY_INPUTS = { prompt: "6.text", width: "13.width", height: "13.height", seed: "3.seed" };

type Node = { class_type: string; inputs: Record<string, unknown> };
type Workflow = Record<string, Node>;

interface Job {
  id: string;
  number: number;
  workflow: Workflow;
  readyAt: number;
  outputs: Record<string, { images: Array<{ filename: string; subfolder: string; type: string }> }>;
  error?: { node_id: string; node_type: string; exception_message: string; exception_type: string };
}

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

/** JSON with every non-ASCII character escaped, so that it fits a Latin-1 tEXt chunk. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** What the graph of the workflow makes: walks from the sampler to its prompt and latent size, as ComfyUI would run it. */
function readGraph(
  workflow: Workflow,
): { prompt: string; seed: number; width: number; height: number } | string {
  const linked = (value: unknown): Node | undefined =>
    Array.isArray(value) && typeof value[0] === "string" ? workflow[value[0]] : undefined;
  const sampler = Object.values(workflow).find((node) => node.class_type.startsWith("KSampler"));
  if (sampler === undefined) return "no sampler in the workflow";
  const seed = sampler.inputs.seed ?? sampler.inputs.noise_seed;
  const prompt = linked(sampler.inputs.positive)?.inputs.text;
  const latent = linked(sampler.inputs.latent_image)?.inputs;
  if (typeof seed !== "number" || typeof prompt !== "string" || latent === undefined)
    return "the sampler's inputs are missing";
  const { width, height } = latent;
  if (typeof width !== "number" || typeof height !== "number") return "the latent has no size";
  return { prompt, seed, width, height };
}

function comfyProtocol(
  knobs: FakeComfyUiSettings,
  jobs: Map<string, Job>,
  files: Map<string, Buffer>,
  received: Workflow[],
): FakeProtocol {
  let counter = 0;
  const history = (job: Job) => ({
    prompt: [job.number, job.id, job.workflow, {}, Object.keys(job.outputs)],
    outputs: job.outputs,
    status: job.error
      ? {
          status_str: "error",
          completed: false,
          messages: [
            ["execution_start", { prompt_id: job.id, timestamp: job.readyAt }],
            [
              "execution_error",
              { prompt_id: job.id, ...job.error, traceback: [], current_inputs: {}, current_outputs: {} },
            ],
          ],
        }
      : {
          status_str: "success",
          completed: true,
          messages: [
            ["execution_start", { prompt_id: job.id, timestamp: job.readyAt }],
            ["execution_success", { prompt_id: job.id, timestamp: job.readyAt }],
          ],
        },
    meta: {},
  });
  return {
    // aiohttp answers unknown routes and crashes as text; ComfyUI's own errors are JSON.
    errorBody: (status, message) => ({
      error: { type: "server_error", message, details: "", extra_info: {} },
      node_errors: {},
      status,
    }),
    async handle(request: FakeRequest): Promise<FakeReply> {
      const { method, path, query } = request;
      if (method === "GET" && path === "/system_stats") {
        return json(200, {
          system: {
            os: "posix",
            python_version: "3.12.3",
            comfyui_version: "0.3.75",
            embedded_python: false,
          },
          devices: [
            {
              name: "cuda:0 Fake GPU",
              type: "cuda",
              index: 0,
              vram_total: 25_769_803_776,
              vram_free: 20_000_000_000,
            },
          ],
        });
      }
      if (method === "POST" && (path === "/queue" || path === "/interrupt"))
        return { type: "empty", status: 200 };
      if (method === "GET" && path.startsWith("/history/")) {
        const job = jobs.get(decodeURIComponent(path.slice("/history/".length)));
        // ComfyUI answers {} while the prompt waits or runs.
        return json(200, job === undefined || Date.now() < job.readyAt ? {} : { [job.id]: history(job) });
      }
      if (method === "GET" && path === "/view") {
        const key = `${query.get("type") ?? "output"}/${query.get("subfolder") ?? ""}/${query.get("filename") ?? ""}`;
        const file = files.get(key);
        return file === undefined
          ? { type: "empty", status: 404 }
          : { type: "binary", status: 200, contentType: "image/png", body: file };
      }
      if (method !== "POST" || path !== "/prompt")
        return {
          type: "binary",
          status: 404,
          contentType: "text/plain",
          body: Buffer.from("404: Not Found"),
        };
      const body = request.body as
        | { prompt?: unknown; client_id?: unknown; extra_data?: { extra_pnginfo?: { workflow?: unknown } } }
        | undefined;
      const workflow = body?.prompt;
      if (typeof workflow !== "object" || workflow === null || Array.isArray(workflow)) {
        return json(400, {
          error: { type: "invalid_prompt", message: "Invalid prompt", details: "", extra_info: {} },
          node_errors: {},
        });
      }
      const nodes = workflow as Workflow;
      received.push(nodes);
      for (const [id, node] of Object.entries(nodes)) {
        if (typeof node?.class_type !== "string" || typeof node.inputs !== "object") {
          return json(400, {
            error: {
              type: "invalid_prompt",
              message: `Cannot execute because a node is missing the class_type property.: Node ID '#${id}'`,
              details: "",
              extra_info: {},
            },
            node_errors: {},
          });
        }
      }
      if (knobs.nodeErrors) {
        const message = "Value not in list";
        const details = "unet_name: 'z_image_turbo_bf16.safetensors' not in []";
        return json(400, {
          error: {
            type: "prompt_outputs_failed_validation",
            message: "Prompt outputs failed validation",
            details: `UNETLoader:\n  - ${message}: ${details}`,
            extra_info: {},
          },
          node_errors: {
            "1": {
              errors: [{ type: "value_not_in_list", message, details, extra_info: {} }],
              dependent_outputs: ["9"],
              class_type: "UNETLoader",
            },
          },
        });
      }
      const saver = Object.entries(nodes).find(([, node]) => node.class_type === "SaveImage");
      if (saver === undefined) {
        return json(400, {
          error: { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} },
          node_errors: [],
        });
      }
      const id = randomUUID();
      const number = counter++;
      const job: Job = {
        id,
        number,
        workflow: nodes,
        readyAt: Date.now() + knobs.historyDelayMs,
        outputs: {},
      };
      const graph = readGraph(nodes);
      if (knobs.failRun || typeof graph === "string") {
        job.error = {
          node_id: "3",
          node_type: "KSampler",
          exception_message:
            typeof graph === "string" ? graph : "CUDA out of memory. Tried to allocate 2.00 GiB",
          exception_type: typeof graph === "string" ? "ValueError" : "torch.OutOfMemoryError",
        };
      } else {
        const uiWorkflow = body?.extra_data?.extra_pnginfo?.workflow ?? {
          nodes: Object.entries(nodes).map(([nodeId, node]) => ({ id: nodeId, type: node.class_type })),
          links: [],
        };
        const { data } = await fakePicture({
          ...graph,
          text: { prompt: asciiJson(nodes), workflow: asciiJson(uiWorkflow) },
        });
        const prefix =
          typeof saver[1].inputs.filename_prefix === "string" ? saver[1].inputs.filename_prefix : "ComfyUI";
        const filename = `${prefix}_${String(number + 1).padStart(5, "0")}_.png`;
        files.set(`output//${filename}`, data);
        job.outputs = { [saver[0]]: { images: [{ filename, subfolder: "", type: "output" }] } };
      }
      jobs.set(id, job);
      return json(200, { prompt_id: id, number, node_errors: {} });
    },
  };
}

/**
 * A fake ComfyUI: `POST /prompt` checks the workflow (API format, an output node) and "runs" it by
 * walking from the sampler to its prompt, seed and latent size, so a value put in the wrong node
 * changes the picture; `GET /history/{id}` answers `{}` until `historyDelayMs` passed, then the
 * outputs; `GET /view` serves the PNG, which carries tEXt chunks `prompt` and `workflow` like real
 * ComfyUI (and `zona-fake`); `GET /system_stats`; `POST /queue` and `/interrupt` are accepted.
 */
export class FakeComfyUiServer extends FakeServer {
  readonly comfy: FakeComfyUiSettings;
  /** Every workflow received by `POST /prompt`, in order. */
  readonly workflows: Workflow[];
  private readonly jobs: Map<string, Job>;

  constructor(settings: Partial<FakeSettings & FakeComfyUiSettings> = {}) {
    const knobs: FakeComfyUiSettings = { ...DEFAULT_COMFYUI_SETTINGS };
    const jobs = new Map<string, Job>();
    const workflows: Workflow[] = [];
    super(comfyProtocol(knobs, jobs, new Map(), workflows), {});
    this.comfy = knobs;
    this.jobs = jobs;
    this.workflows = workflows;
    this.configure(settings);
  }

  /** Changes settings, the base ones and the ComfyUI knobs alike. */
  override configure(settings: Partial<FakeSettings & FakeComfyUiSettings>): void {
    super.configure(takeKnobs(settings, this.comfy, COMFYUI_KEYS));
  }

  /** The prompt ids taken off the queue or interrupted (`POST /queue` delete, `POST /interrupt`). */
  get cancelled(): string[] {
    return this.requests.flatMap((request) => {
      const body = request.body as { delete?: unknown; prompt_id?: unknown } | undefined;
      if (request.path === "/queue" && Array.isArray(body?.delete)) return body.delete as string[];
      if (request.path === "/interrupt" && typeof body?.prompt_id === "string") return [body.prompt_id];
      return [];
    });
  }

  override clearRequests(): void {
    super.clearRequests();
    this.workflows.length = 0;
    this.jobs.clear();
  }
}
