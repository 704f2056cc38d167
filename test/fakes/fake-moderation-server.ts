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
}

/** The defaults of the moderation knobs. */
export const DEFAULT_MODERATION_SETTINGS: FakeModerationSettings = {
  flagWord: "forbidden",
  flagCategories: ["violence"],
  malformed: false,
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
      const texts = typeof input.input === "string" ? [input.input] : input.input;
      if (!Array.isArray(texts) || !texts.every((t) => typeof t === "string")) {
        return json(400, errorBody(400, "input must be a string or a list of strings"));
      }
      const model = typeof input.model === "string" ? input.model : "fake-moderation";
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
 * word ("forbidden" unless configured), in the configured categories; `GET /health`; with `models`
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
