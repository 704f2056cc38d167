/**
 * Text PostgreSQL cannot store (NUL, a lone UTF-16 surrogate) is refused at the boundary on every
 * API, wherever it is in the request: a JSON value or key at any depth, a multipart text field, a
 * query parameter. Each answer names the field in its API's error shape; none is a 500. A surrogate
 * pair (an emoji) is ordinary text and still passes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import {
  FakeModerationServer,
  FakeOpenAiServer,
  FakeTeiServer,
  FakeVideosServer,
  FakeWhisperServer,
  toneWav,
} from "../fakes/index.ts";
import { type KbStack, startKbStack } from "../knowledge/kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are checked by assertions, not by types.
type Json = any;

const CHAT = "gemma3.8-27b";
const NUL = "a lighthouse\u0000at dusk";
const LONE = "half a fox \ud83e";
const EMOJI = "a fox 🦊 at dusk";
const WAV = toneWav({ seconds: 0.5 });
const SAYS = {
  nul: /NUL character \(U\+0000\).*cannot be stored/,
  lone: /unpaired UTF-16 surrogate.*cannot be stored/,
};

const user = (content: unknown) => ({ role: "user", content });

/** One request with text that cannot be stored, and the field its answer must name. */
interface Case {
  name: string;
  method?: string;
  path: string;
  body?: unknown;
  field: string;
  says: RegExp;
}

let s: KbStack;
let fakes: {
  tei: FakeTeiServer;
  chat: FakeOpenAiServer;
  whisper: FakeWhisperServer;
  videos: FakeVideosServer;
  moderation: FakeModerationServer;
};
let key = "";
let app: AppUserHandle;
let session = "";
let accountId = "";

beforeAll(async () => {
  fakes = {
    tei: new FakeTeiServer({ wordEmbeddings: true }),
    chat: new FakeOpenAiServer(),
    whisper: new FakeWhisperServer(),
    videos: new FakeVideosServer({ jobMs: 100 }),
    moderation: new FakeModerationServer(),
  };
  const [tei, chat, whisper, videos, moderation] = await Promise.all([
    fakes.tei.start(),
    fakes.chat.start(),
    fakes.whisper.start(),
    fakes.videos.start(),
    fakes.moderation.start(),
  ]);
  s = await startKbStack({
    fakes: { tei: fakes.tei, chat: fakes.chat },
    config: {
      // A transcription with a prompt goes to the fallback ("Switzerland") server.
      installation: { zones: [{ id: "ch-ti" }], fallback_zone: "ch-fb" },
      tiers: { slow: { multiplier: 1, requests_per_minute: 1_000_000 } },
      engines: { video_poll_interval_seconds: 0.02 },
      models: [
        { id: CHAT, kind: "chat" },
        { id: "bge-m3", kind: "embedding" },
        { id: "asr-1", kind: "asr" },
        { id: "wan-2.2-5b-fast", kind: "video" },
      ],
      machines: [
        { name: "chat", zone: "ch-ti", protocol: "openai", url: chat.url, models: [CHAT] },
        { name: "tei", zone: "ch-ti", protocol: "tei", url: tei.url, models: ["bge-m3"] },
        { name: "whisper", zone: "ch-fb", protocol: "whisper", url: whisper.url, models: ["asr-1"] },
        { name: "moderation", zone: "ch-ti", protocol: "moderation", url: moderation.url },
        { name: "videos", zone: "ch-ti", protocol: "videos", url: videos.url, models: ["wan-2.2-5b-fast"] },
      ],
    },
  });
  ({ key, accountId } = await s.t.newKey());
  app = await s.user();
  const created = await app.post("/chat/sessions", { title: "Lighthouses" });
  expect(created.status).toBe(201);
  session = ((await created.json()) as { id: string }).id;
}, 60_000);

afterAll(async () => {
  await s?.close();
  await Promise.all(Object.values(fakes ?? {}).map((fake) => fake.close()));
});

async function read(response: Response): Promise<{ status: number; body: Json }> {
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

function keyCall(method: string, path: string, body?: unknown): Promise<Response> {
  return s.t.fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

function form(fields: Record<string, string>, file?: { field: string; name: string }): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  if (file) data.append(file.field, new Blob([new Uint8Array(WAV)], { type: "audio/wav" }), file.name);
  return data;
}

const standardError = (field: string, says: RegExp, code: string | null) => ({
  error: {
    message: expect.stringMatching(says),
    type: "invalid_request_error",
    code,
    param: field,
    request_id: expect.any(String),
  },
});

const appValidationError = (field: string, says: RegExp) => ({
  message: expect.stringMatching(says),
  error: { code: "validation_error", message: expect.stringMatching(says) },
  errors: { [field]: [expect.stringMatching(says)] },
});

const KEY_CASES: Case[] = [
  {
    name: "POST /v1/chat/completions, NUL in a message",
    path: "/v1/chat/completions",
    body: { model: CHAT, messages: [user("hi"), user(NUL)] },
    field: "messages.1.content",
    says: SAYS.nul,
  },
  {
    name: "POST /v1/chat/completions, a lone surrogate in a content part",
    path: "/v1/chat/completions",
    body: { model: CHAT, messages: [user([{ type: "text", text: LONE }])] },
    field: "messages.0.content.0.text",
    says: SAYS.lone,
  },
  {
    name: "POST /v1/chat/completions, NUL in an object key",
    path: "/v1/chat/completions",
    body: { model: CHAT, messages: [user("hi")], metadata: { "a\u0000b": "x" } },
    field: "metadata.a\uFFFDb",
    says: SAYS.nul,
  },
  {
    name: "POST /v1/completions, NUL in the model (top level)",
    path: "/v1/completions",
    body: { model: `${CHAT}\u0000`, prompt: "hi" },
    field: "model",
    says: SAYS.nul,
  },
  {
    name: "POST /v1/completions, a lone surrogate in a prompt list",
    path: "/v1/completions",
    body: { model: CHAT, prompt: ["hi", LONE] },
    field: "prompt.1",
    says: SAYS.lone,
  },
  {
    name: "POST /v1/embeddings, NUL in the second input",
    path: "/v1/embeddings",
    body: { model: "bge-m3", input: ["a fox", NUL] },
    field: "input.1",
    says: SAYS.nul,
  },
  {
    name: "POST /v1/images/generations, a lone surrogate in the prompt",
    path: "/v1/images/generations",
    body: { model: "z-image-turbo", prompt: LONE },
    field: "prompt",
    says: SAYS.lone,
  },
  {
    name: "POST /v1/videos (JSON), NUL in the prompt",
    path: "/v1/videos",
    body: { prompt: NUL },
    field: "prompt",
    says: SAYS.nul,
  },
  {
    name: "POST /v1/audio/speech, NUL in the input",
    path: "/v1/audio/speech",
    body: { model: "tts-1", input: NUL, voice: "paola" },
    field: "input",
    says: SAYS.nul,
  },
  {
    name: "POST /v1/responses, a lone surrogate in a nested message",
    path: "/v1/responses",
    body: { model: CHAT, input: [user(LONE)] },
    field: "input.0.content",
    says: SAYS.lone,
  },
  {
    name: "POST /v1/responses, NUL in the instructions",
    path: "/v1/responses",
    body: { model: CHAT, input: "hi", instructions: NUL },
    field: "instructions",
    says: SAYS.nul,
  },
  {
    name: "GET /v1/videos, NUL in a query parameter",
    method: "GET",
    path: "/v1/videos?after=%00",
    field: "after",
    says: SAYS.nul,
  },
];

describe('spec "Errors / Key API status codes": 400 invalid_request_error `invalid_value` names the field holding NUL or a lone surrogate', () => {
  it.each(KEY_CASES)("$name: param $field", async ({ method, path, body, field, says }) => {
    const answer = await read(await keyCall(method ?? "POST", path, body));
    expect(answer).toEqual({ status: 400, body: standardError(field, says, "invalid_value") });
  });

  it("a body nested 5,000 levels deep with NUL at the bottom is a 400 too, never a 500", async () => {
    const depth = 5_000;
    const body = `${'{"a":'.repeat(depth)}"\\u0000"${"}".repeat(depth)}`;
    const response = await s.t.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body,
    });
    const answer = await read(response);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: "invalid_value",
      param: Array(depth).fill("a").join("."),
    });
  });

  it("without a valid key the answer is still 401: authentication comes first", async () => {
    const response = await s.t.fetch("/v1/videos", {
      method: "POST",
      headers: { authorization: "Bearer sk-wrong", "content-type": "application/json" },
      body: JSON.stringify({ prompt: NUL }),
    });
    expect((await read(response)).status).toBe(401);
  });
});

describe('spec "Errors / Key API status codes": multipart text fields are checked like JSON (400 naming the field)', () => {
  it.each([
    {
      name: "POST /v1/videos (form), NUL in the prompt",
      path: "/v1/videos",
      data: () => form({ prompt: NUL, seconds: "5" }),
    },
    {
      name: "POST /v1/audio/transcriptions, NUL in the prompt",
      path: "/v1/audio/transcriptions",
      data: () => form({ model: "asr-1", prompt: NUL }, { field: "file", name: "a.wav" }),
    },
  ])("$name: param prompt", async ({ path, data }) => {
    const response = await s.t.fetch(path, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: data(),
    });
    expect(await read(response)).toEqual({
      status: 400,
      body: standardError("prompt", SAYS.nul, "invalid_value"),
    });
  });
});

describe('spec "Errors / App API errors": 422 validation_error lists the field holding NUL or a lone surrogate in `errors`', () => {
  const cases: Array<Case & { signedIn?: false }> = [
    {
      name: "POST /auth/register, NUL in the email",
      path: "/auth/register",
      body: { email: "fox\u0000@example.com", password: "a long enough password" },
      field: "email",
      says: SAYS.nul,
      signedIn: false,
    },
    {
      name: "POST /chat/sessions, NUL in the title",
      path: "/chat/sessions",
      body: { title: NUL },
      field: "title",
      says: SAYS.nul,
    },
    {
      name: "PATCH /chat/sessions/{id}, a lone surrogate in the title",
      method: "PATCH",
      path: "/chat/sessions/{id}",
      body: { title: LONE },
      field: "title",
      says: SAYS.lone,
    },
    {
      name: "POST /chat/sessions/{id}/messages, NUL in the content",
      path: "/chat/sessions/{id}/messages",
      body: { content: NUL, model: CHAT },
      field: "content",
      says: SAYS.nul,
    },
    {
      name: "POST /chat/sessions/{id}/messages, a lone surrogate deep in an extra field",
      path: "/chat/sessions/{id}/messages",
      body: { content: "hi", model: CHAT, extra: { notes: ["fine", LONE] } },
      field: "extra.notes.1",
      says: SAYS.lone,
    },
    {
      name: "POST /rag/kb, a lone surrogate in the name",
      path: "/rag/kb",
      body: { name: LONE },
      field: "name",
      says: SAYS.lone,
    },
    {
      name: "POST /rag/kb, NUL in the description",
      path: "/rag/kb",
      body: { name: "Lighthouses", description: NUL },
      field: "description",
      says: SAYS.nul,
    },
    {
      name: "GET /rag/kb, NUL in a query parameter",
      method: "GET",
      path: "/rag/kb?q=%00",
      field: "q",
      says: SAYS.nul,
    },
  ];

  it.each(cases)("$name: errors.$field", async ({ method, path, body, field, says, signedIn }) => {
    const url = path.replace("{id}", session);
    const init: RequestInit = {
      method: method ?? "POST",
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    };
    const response = signedIn === false ? await s.t.fetch(`/api/v1${url}`, init) : await app.fetch(url, init);
    expect(await read(response)).toEqual({ status: 422, body: appValidationError(field, says) });
  });

  it("POST /audio/transcribe (form), NUL in the prompt: errors.prompt", async () => {
    const response = await app.fetch("/audio/transcribe", {
      method: "POST",
      body: form({ model: "asr-1", prompt: NUL }, { field: "audio", name: "a.wav" }),
    });
    expect(await read(response)).toEqual({ status: 422, body: appValidationError("prompt", SAYS.nul) });
  });
});

describe('operator API (docs/admin-api.md "Errors"): 400 invalid_request_error naming the field in `param`', () => {
  it.each([
    {
      name: "POST /accounts, NUL in the email",
      path: "/accounts",
      body: { email: "fox\u0000@example.com" },
      field: "email",
      says: SAYS.nul,
    },
    {
      name: "POST /accounts, a lone surrogate in a nested value",
      path: "/accounts",
      body: { email: "fox@example.com", extra: { tags: [LONE] } },
      field: "extra.tags.0",
      says: SAYS.lone,
    },
    {
      name: "GET /accounts, NUL in the email query",
      method: "GET",
      path: "/accounts?email=%00",
      field: "email",
      says: SAYS.nul,
    },
  ] satisfies Case[])("$name: param $field", async ({ method, path, body, field, says }) => {
    const answer = await s.t.admin(method ?? "POST", path, body);
    expect(answer).toEqual({ status: 400, body: standardError(field, says, null) });
  });
});

describe("a surrogate pair (an emoji) is ordinary text: still accepted on every API", () => {
  it("POST /v1/chat/completions with an emoji in a message: 200", async () => {
    const answer = await read(
      await keyCall("POST", "/v1/chat/completions", { model: CHAT, messages: [user(EMOJI)] }),
    );
    expect(answer.status).toBe(200);
  });

  it("POST /v1/embeddings with an emoji in the input: 200", async () => {
    const answer = await read(await keyCall("POST", "/v1/embeddings", { model: "bge-m3", input: [EMOJI] }));
    expect(answer.status).toBe(200);
  });

  it("POST /v1/audio/transcriptions with an emoji in the prompt: 200", async () => {
    const response = await s.t.fetch("/v1/audio/transcriptions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form({ model: "asr-1", prompt: EMOJI }, { field: "file", name: "a.wav" }),
    });
    const answer = await read(response);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  });

  it("POST /v1/videos (form) with an emoji in the prompt: the job is made with that prompt", async () => {
    const response = await s.t.fetch("/v1/videos", {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      body: form({ prompt: EMOJI, seconds: "5", size: "1280x704" }),
    });
    const answer = await read(response);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.prompt).toBe(EMOJI);
  });

  it("app API: a chat session titled with an emoji, renamed with another; a base named with one", async () => {
    const created = await read(await app.post("/chat/sessions", { title: EMOJI }));
    expect(created).toMatchObject({ status: 201, body: { title: EMOJI } });
    const renamed = await read(
      await app.post(`/chat/sessions/${created.body.id}`, { title: "🦊🌊" }, "PATCH"),
    );
    expect(renamed).toMatchObject({ status: 200, body: { title: "🦊🌊" } });
    const base = await read(await app.post("/rag/kb", { name: EMOJI }));
    expect(base).toMatchObject({ status: 201, body: { name: EMOJI } });
  });

  it("operator API: a key named with an emoji", async () => {
    const answer = await s.t.admin("POST", `/accounts/${accountId}/keys`, { name: EMOJI });
    expect(answer).toMatchObject({ status: 201, body: { name: EMOJI } });
  });
});
