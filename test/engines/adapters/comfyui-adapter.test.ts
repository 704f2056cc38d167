import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../../src/config/load.ts";
import { createComfyUiAdapter } from "../../../src/engines/adapters/comfyui-adapter.ts";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import type { ImageEngine } from "../../../src/engines/modalities.ts";
import type { ImageCall, MachineConfig } from "../../../src/engines/types.ts";
import {
  DEFAULT_COMFYUI_SETTINGS,
  FAKE_COMFY_INPUTS,
  FakeComfyUiServer,
  fakeComfyWorkflow,
  fakeMachine,
  fakePictureMark,
  promptHash,
  readPngText,
} from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const fake = new FakeComfyUiServer({ historyDelayMs: 200 });
const dir = mkdtempSync(join(tmpdir(), "zona-comfyui-"));
const workflowPath = join(dir, "z-image-turbo.json");
writeFileSync(workflowPath, JSON.stringify(fakeComfyWorkflow()));
let client: UpstreamClient;
let generate: ImageEngine["generateImage"];
const signal = () => new AbortController().signal;
const machine = (overrides: Partial<MachineConfig> = {}) =>
  fakeMachine("comfyui", fake.url, {
    models: ["z-image-turbo"],
    workflow: workflowPath,
    workflow_inputs: FAKE_COMFY_INPUTS,
    ...overrides,
  });
const call = (overrides: Partial<ImageCall> = {}): ImageCall => ({
  model: "z-image-turbo",
  prompt: "a paper boat on a lake",
  size: "1536x1024",
  ...overrides,
});

beforeAll(async () => {
  await fake.start();
  client = new UpstreamClient();
  generate = createComfyUiAdapter(client, { imageTimeoutMs: 1_500, pollMs: 50 }).images.generateImage;
});
afterAll(async () => {
  await client.close();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await fake.setMode("normal");
  fake.configure({ ...DEFAULT_COMFYUI_SETTINGS, historyDelayMs: 200 });
  fake.clearRequests();
});

describe("comfyui adapter", () => {
  it("puts prompt, width, height and seed in their mapped nodes and leaves the rest of the workflow as it is", async () => {
    const image = await generate(machine(), call({ seed: 77 }), signal());
    const sent = fake.workflows[0];
    const original = fakeComfyWorkflow();
    expect(sent?.["6"]?.inputs.text).toBe("a paper boat on a lake");
    expect([sent?.["13"]?.inputs.width, sent?.["13"]?.inputs.height]).toEqual([1536, 1024]);
    expect(sent?.["3"]?.inputs.seed).toBe(77);
    expect(sent?.["1"]).toEqual(original["1"]);
    expect(sent?.["3"]?.inputs.steps).toBe(8);
    expect(image.mime).toBe("image/png");
    const meta = await sharp(image.data).metadata();
    expect([meta.width, meta.height]).toEqual([1536, 1024]);
    expect(fakePictureMark(image.data)).toEqual({
      prompt_hash: promptHash("a paper boat on a lake"),
      seed: 77,
    });
    expect(fake.lastRequest.path).toBe("/view");
    expect(fake.lastRequest.query.get("type")).toBe("output");
  });

  it("polls the history until the outputs are there", async () => {
    fake.configure({ historyDelayMs: 400 });
    await generate(machine(), call(), signal());
    const polls = fake.requests.filter((r) => r.path.startsWith("/history/"));
    expect(polls.length).toBeGreaterThan(2);
    expect(fake.requestsTo("/prompt")[0]?.body).toMatchObject({ client_id: expect.any(String) });
  });

  it("sends a random seed when the request has none, instead of the workflow's fixed one", async () => {
    await generate(machine(), call(), signal());
    await generate(machine(), call(), signal());
    const seeds = fake.workflows.map((w) => w["3"]?.inputs.seed);
    expect(seeds[0]).not.toBe(42);
    expect(seeds[0]).not.toBe(seeds[1]);
  });

  it("delivers the PNG with ComfyUI's tEXt chunks prompt and workflow", async () => {
    const image = await generate(machine(), call({ seed: 5 }), signal());
    const texts = readPngText(image.data);
    expect(JSON.parse(texts.prompt ?? "{}")["6"].inputs.text).toBe("a paper boat on a lake");
    expect(JSON.parse(texts.workflow ?? "{}")).toHaveProperty("nodes");
  });

  it("maps an error in the history to a retryable status failure with ComfyUI's message", async () => {
    fake.configure({ failRun: true });
    const error = await failure(generate(machine(), call(), signal()));
    expect([error.kind, error.retryable]).toEqual(["status", true]);
    expect(error.message).toContain("CUDA out of memory");
    expect(error.message).toContain("KSampler");
  });

  it("maps a 400 with node_errors to a status failure naming the first node error", async () => {
    fake.configure({ nodeErrors: true });
    const error = await failure(generate(machine(), call(), signal()));
    expect([error.kind, error.status]).toEqual(["status", 400]);
    expect(error.message).toContain("node 1 (UNETLoader): Value not in list");
  });

  it("times out when the picture never comes, and takes the prompt off ComfyUI's queue", async () => {
    fake.configure({ historyDelayMs: 60_000 });
    const error = await failure(generate(machine(), call(), signal()));
    expect(error.kind).toBe("timeout");
    await expect.poll(() => fake.cancelled.length).toBe(2);
  });

  it("maps hang to timeout and refuse to connect", async () => {
    const hanging = new UpstreamClient({ headersMs: 300 });
    const adapter = createComfyUiAdapter(hanging, { imageTimeoutMs: 1_000 });
    await fake.setMode("hang");
    expect((await failure(adapter.images.generateImage(machine(), call(), signal()))).kind).toBe("timeout");
    await fake.setMode("refuse");
    expect((await failure(generate(machine(), call(), signal()))).kind).toBe("connect");
    await hanging.close();
  });

  it("stops polling when the signal is aborted", async () => {
    fake.configure({ historyDelayMs: 60_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 150);
    expect((await failure(generate(machine(), call(), controller.signal))).kind).toBe("aborted");
  });
});

describe("comfyui machine configuration", () => {
  const config = (machine: Record<string, unknown>) => ({
    installation: { zones: [{ id: "ch" }] },
    models: [{ id: "z-image-turbo", kind: "image" }],
    machines: [
      {
        name: "comfy-1",
        zone: "ch",
        protocol: "comfyui",
        url: "http://127.0.0.1:8188",
        models: ["z-image-turbo"],
        ...machine,
      },
    ],
  });
  const badWorkflow = join(dir, "ui-format.json");
  writeFileSync(badWorkflow, JSON.stringify({ nodes: [], links: [] }));
  const cases: Array<{ rule: string; machine: Record<string, unknown>; field: string; says: string }> = [
    {
      rule: "a workflow is required",
      machine: { workflow_inputs: { prompt: "6.text" } },
      field: "machines[0].workflow",
      says: "is required",
    },
    {
      rule: "workflow_inputs is required",
      machine: { workflow: workflowPath },
      field: "machines[0].workflow_inputs",
      says: "is required",
    },
    {
      rule: "the workflow file must exist",
      machine: { workflow: join(dir, "missing.json"), workflow_inputs: { prompt: "6.text" } },
      field: "machines[0].workflow",
      says: "file not found",
    },
    {
      rule: "the workflow must be in API format",
      machine: { workflow: badWorkflow, workflow_inputs: { prompt: "6.text" } },
      field: "machines[0].workflow",
      says: "Export (API)",
    },
    {
      rule: "a mapped node must exist",
      machine: { workflow: workflowPath, workflow_inputs: { prompt: "99.text" } },
      field: "machines[0].workflow_inputs.prompt",
      says: "node 99",
    },
    {
      rule: "a mapped input must exist",
      machine: { workflow: workflowPath, workflow_inputs: { prompt: "6.text", seed: "3.noise_seed" } },
      field: "machines[0].workflow_inputs.seed",
      says: "no such input",
    },
    {
      rule: "a mapped input must hold a value, not a link",
      machine: { workflow: workflowPath, workflow_inputs: { prompt: "6.clip" } },
      field: "machines[0].workflow_inputs.prompt",
      says: "linked",
    },
  ];
  for (const { rule, machine, field, says } of cases) {
    it(`refuses a comfyui machine: ${rule}`, () => {
      let message = "";
      try {
        parseConfig(config(machine));
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        message = (error as Error).message;
      }
      expect(message).toContain(`${field}: `);
      expect(message).toContain(says);
    });
  }

  it("accepts a comfyui machine whose workflow and node map fit", () => {
    const parsed = parseConfig(config({ workflow: workflowPath, workflow_inputs: FAKE_COMFY_INPUTS }));
    expect(parsed.machines[0]?.workflow_inputs).toEqual(FAKE_COMFY_INPUTS);
  });
});
