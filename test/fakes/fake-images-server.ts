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

/**
 * How the fake answers a generation. `b64_json`: PNGs in base64 (what Zona asks); `url`: links to
 * `/files/<id>.png` on the fake, whatever was asked; `jpeg`: JPEGs in base64; `garbage`: base64 of
 * bytes that are no picture; `empty`: an empty `data` list.
 */
export type FakeImagesAnswer = "b64_json" | "url" | "jpeg" | "garbage" | "empty";

/** Knobs of the images fake. */
export interface FakeImagesSettings {
  answer: FakeImagesAnswer;
  /** `url` answers: links relative to the server (`/files/x.png`) instead of absolute. */
  relativeUrls: boolean;
}

/** The defaults of the images knobs. */
export const DEFAULT_IMAGES_SETTINGS: FakeImagesSettings = { answer: "b64_json", relativeUrls: false };
const IMAGES_KEYS = Object.keys(DEFAULT_IMAGES_SETTINGS) as Array<keyof FakeImagesSettings>;

/** One picture the fake made. */
export interface FakeGeneration {
  model: string;
  prompt: string;
  size: string;
  /** The seed asked, or the random one used. */
  seed: number;
  seedAsked: boolean;
}

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

function errorBody(status: number, message: string): unknown {
  return { error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", code: status } };
}

function imagesProtocol(
  knobs: FakeImagesSettings,
  generations: FakeGeneration[],
  files: Map<string, Buffer>,
  baseUrl: () => string,
): FakeProtocol {
  return {
    errorBody,
    async handle(request: FakeRequest, settings: FakeSettings): Promise<FakeReply> {
      const { method, path } = request;
      if (method === "GET" && path === "/health") return { type: "empty", status: 200 };
      if (method === "GET" && path === "/v1/models") {
        const data = (settings.models ?? ["fake-image"]).map((id) => ({
          id,
          object: "model",
          owned_by: "fake",
        }));
        return json(200, { object: "list", data });
      }
      if (method === "GET" && path.startsWith("/files/")) {
        const file = files.get(path.slice("/files/".length));
        return file === undefined
          ? json(404, errorBody(404, "Not Found"))
          : { type: "binary", status: 200, contentType: "image/png", body: file };
      }
      if (method !== "POST" || path !== "/v1/images/generations")
        return json(404, errorBody(404, "Not Found"));
      const body = request.body;
      const input = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
      if (typeof input.prompt !== "string" || input.prompt.length === 0) {
        return json(400, errorBody(400, "prompt is required"));
      }
      const model = typeof input.model === "string" ? input.model : "fake-image";
      if (settings.models !== undefined && !settings.models.includes(model)) {
        return json(404, errorBody(404, `The model \`${model}\` does not exist.`));
      }
      const size = typeof input.size === "string" ? input.size : "1024x1024";
      const match = /^(\d+)x(\d+)$/.exec(size);
      if (!match) return json(400, errorBody(400, `Invalid size ${size}`));
      const n = typeof input.n === "number" ? input.n : 1;
      const seedAsked = typeof input.seed === "number";
      const data: unknown[] = [];
      for (let i = 0; i < n; i++) {
        const picture = await fakePicture({
          prompt: input.prompt,
          seed: seedAsked ? (input.seed as number) + i : undefined,
          width: Number(match[1]),
          height: Number(match[2]),
          format: knobs.answer === "jpeg" ? "jpeg" : "png",
        });
        generations.push({ model, prompt: input.prompt, size, seed: picture.seed, seedAsked });
        // Fields Zona does not read, as real servers send them.
        const extra = { revised_prompt: input.prompt, seed: picture.seed };
        if (knobs.answer === "url") {
          const id = `${randomUUID()}.png`;
          files.set(id, picture.data);
          data.push({ url: knobs.relativeUrls ? `/files/${id}` : `${baseUrl()}/files/${id}`, ...extra });
        } else if (knobs.answer === "garbage") {
          data.push({ b64_json: Buffer.from("this is not a picture").toString("base64"), ...extra });
        } else if (knobs.answer !== "empty") {
          data.push({ b64_json: picture.data.toString("base64"), ...extra });
        }
      }
      return json(200, {
        created: Math.floor(Date.now() / 1000),
        data,
        output_format: knobs.answer === "jpeg" ? "jpeg" : "png",
        usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
      });
    },
  };
}

/**
 * A fake OpenAI-style image server (vLLM-Omni, SGLang diffusion, stable-diffusion.cpp, LocalAI):
 * `POST /v1/images/generations` makes deterministic pictures (fake-picture.ts) of the asked size,
 * with the seed asked or a random one; `GET /v1/models` lists `models` (default `fake-image`); with
 * `models` set another model name gets 404; `GET /files/<id>.png` serves the pictures of `url` answers.
 */
export class FakeImagesServer extends FakeServer {
  readonly images: FakeImagesSettings;
  /** Every picture made, in order. */
  readonly generations: FakeGeneration[];

  constructor(settings: Partial<FakeSettings & FakeImagesSettings> = {}) {
    const knobs: FakeImagesSettings = { ...DEFAULT_IMAGES_SETTINGS };
    const generations: FakeGeneration[] = [];
    const files = new Map<string, Buffer>();

    super(
      imagesProtocol(knobs, generations, files, () => this?.url ?? ""),
      {},
    );
    this.images = knobs;
    this.generations = generations;
    this.configure(settings);
  }

  /** Changes settings, the base ones and the images knobs alike. */
  override configure(settings: Partial<FakeSettings & FakeImagesSettings>): void {
    super.configure(takeKnobs(settings, this.images, IMAGES_KEYS));
  }

  override clearRequests(): void {
    super.clearRequests();
    this.generations.length = 0;
  }
}
