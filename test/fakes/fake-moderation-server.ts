import {
  type FakeProtocol,
  type FakeReply,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
  takeKnobs,
} from "./fake-server.ts";

/** Knobs of the moderation fake. */
export interface FakeModerationSettings {
  /** A text containing this word (any case) is flagged. */
  flagWord: string;
  /** The categories a flagged text is flagged in. */
  flagCategories: string[];
  /** Answer 200 with a body that has no results (a broken server). */
  malformed: boolean;
  /** Decides which pictures (multi-modal `image_url` inputs, decoded) are flagged; unset: none. */
  flagImage: ((png: Buffer) => boolean) | undefined;
}

/** The defaults of the moderation knobs. */
export const DEFAULT_MODERATION_SETTINGS: FakeModerationSettings = {
  flagWord: "forbidden",
  flagCategories: ["violence"],
  malformed: false,
  flagImage: undefined,
};

const CATEGORIES = [
  "harassment",
  "hate",
  "self-harm",
  "sexual",
  "sexual/minors",
  "violence",
  "violence/graphic",
];
const MODERATION_KEYS = Object.keys(DEFAULT_MODERATION_SETTINGS) as Array<keyof FakeModerationSettings>;

function json(status: number, body: unknown): FakeReply {
  return { type: "json", status, body };
}

function errorBody(status: number, message: string): unknown {
  return { error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", code: status } };
}

function result(flagged: boolean, flagCategories: string[], inputType: "text" | "image"): unknown {
  const on = (category: string) => flagged && flagCategories.includes(category);
  return {
    flagged,
    categories: Object.fromEntries(CATEGORIES.map((category) => [category, on(category)])),
    category_scores: Object.fromEntries(CATEGORIES.map((category) => [category, on(category) ? 0.97 : 0.01])),
    category_applied_input_types: Object.fromEntries(CATEGORIES.map((category) => [category, [inputType]])),
  };
}

/**
 * OpenAI's multi-modal input (`[{type: "text", text}, {type: "image_url", image_url: {url}}]`): one
 * result for the whole input, flagged when a text has the word or `flagImage` refuses a picture.
 */
function multiModal(
  items: unknown[],
  model: string,
  knobs: FakeModerationSettings,
  settings: FakeSettings,
): FakeReply {
  if (settings.models !== undefined && !settings.models.includes(model)) {
    return json(404, errorBody(404, `The model ${model} does not exist`));
  }
  let flagged = false;
  let hasImage = false;
  const word = knobs.flagWord.toLowerCase();
  for (const item of items) {
    const part = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
    if (part.type === "text" && typeof part.text === "string") {
      flagged ||= word.length > 0 && part.text.toLowerCase().includes(word);
      continue;
    }
    const url = (part.image_url as { url?: unknown } | undefined)?.url;
    const data = typeof url === "string" ? /^data:image\/[a-z]+;base64,(.*)$/s.exec(url) : null;
    if (part.type !== "image_url" || !data) {
      return json(400, errorBody(400, "each input must be a text or an image_url with a data URL"));
    }
    hasImage = true;
    flagged ||= knobs.flagImage?.(Buffer.from(data[1] ?? "", "base64")) ?? false;
  }
  if (knobs.malformed) return json(200, { id: "modr-fake", model });
  return json(200, {
    id: "modr-fake",
    model,
    results: [result(flagged, knobs.flagCategories, hasImage ? "image" : "text")],
  });
}

function moderationProtocol(knobs: FakeModerationSettings): FakeProtocol {
  return {
    errorBody,
    handle(request: FakeRequest, settings: FakeSettings): FakeReply {
      const { method, path } = request;
      if (method === "GET" && path === "/health") return { type: "empty", status: 200 };
      // A server that names its models lists them; one that does not has no list.
      if (method === "GET" && path === "/v1/models" && settings.models !== undefined) {
        const data = settings.models.map((id) => ({ id, object: "model", owned_by: "fake" }));
        return json(200, { object: "list", data });
      }
      if (method !== "POST" || path !== "/v1/moderations") return json(404, errorBody(404, "Not Found"));
      const body = request.body;
      const input = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
      const model = typeof input.model === "string" ? input.model : "fake-moderation";
      if (Array.isArray(input.input) && input.input.some((item) => typeof item === "object")) {
        return multiModal(input.input, model, knobs, settings);
      }
      const texts = typeof input.input === "string" ? [input.input] : input.input;
      if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string")) {
        return json(400, errorBody(400, "input must be a string or a list of strings"));
      }
      if (settings.models !== undefined && !settings.models.includes(model)) {
        return json(404, errorBody(404, `The model ${model} does not exist`));
      }
      if (knobs.malformed) return json(200, { id: "modr-fake", model });
      const word = knobs.flagWord.toLowerCase();
      return json(200, {
        id: "modr-fake",
        model,
        results: texts.map((text: string) => {
          const flagged = word.length > 0 && text.toLowerCase().includes(word);
          const on = (category: string) => flagged && knobs.flagCategories.includes(category);
          return {
            flagged,
            categories: Object.fromEntries(CATEGORIES.map((category) => [category, on(category)])),
            category_scores: Object.fromEntries(
              CATEGORIES.map((category) => [category, on(category) ? 0.97 : 0.01]),
            ),
          };
        }),
      });
    },
  };
}

/**
 * A fake OpenAI-style moderation server: `POST /v1/moderations` flags the texts that contain a
 * word ("forbidden" unless configured), in the configured categories, and the pictures of a
 * multi-modal input that `flagImage` refuses (one result for the whole input); `GET /health`; with `models`
 * set, `GET /v1/models` lists them and another model name is refused with 404.
 */
export class FakeModerationServer extends FakeServer {
  readonly moderation: FakeModerationSettings;

  constructor(settings: Partial<FakeSettings & FakeModerationSettings> = {}) {
    const knobs: FakeModerationSettings = {
      ...DEFAULT_MODERATION_SETTINGS,
      flagCategories: [...DEFAULT_MODERATION_SETTINGS.flagCategories],
    };
    super(moderationProtocol(knobs), {});
    this.moderation = knobs;
    this.configure(settings);
  }

  /** Changes settings, the base ones and the moderation knobs alike. */
  override configure(settings: Partial<FakeSettings & FakeModerationSettings>): void {
    super.configure(takeKnobs(settings, this.moderation, MODERATION_KEYS));
  }
}
