import { existsSync, readdirSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uploadFolderOf } from "../../src/http/multipart-upload.ts";
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
import {
  type ErrorSurface,
  expectHealthy,
  expectSaneAnswer,
  FUZZ_SEED,
  firstBody,
  fuzzRuns,
  rawExchange,
  StatusTally,
  statusesOf,
} from "./hostile-values.ts";

// The multipart endpoints of both APIs fed broken forms. FUZZ_RUNS=300 for a longer search.
const RUNS = fuzzRuns(15);
const WAV = toneWav({ seconds: 0.5 });
const CRLF = "\r\n";

/** One part of a form; `name` undefined leaves it out of the part's header. */
interface Part {
  name: Buffer | undefined;
  filename: Buffer | undefined;
  type: string | undefined;
  /** A header line more (a huge one, or none). */
  extra: string | undefined;
  content: Buffer;
  /** No Content-Disposition at all. */
  bare: boolean;
}

/** How the form as a whole is broken. */
interface FormShape {
  parts: Part[];
  boundary: "normal" | "missing" | "empty" | "quoted" | "long" | "duplicate" | "mismatch" | "odd";
  ending: "complete" | "no-closing" | "cut" | "lf-only" | "preamble" | "epilogue";
  cut: number;
  manyFields: number;
}

const text = (value: string) => Buffer.from(value, "utf8");
const quoted = (value: Buffer) => Buffer.concat([text('"'), value, text('"')]);

const field = (name: string, value: string | Buffer, filename?: string): Part => ({
  name: text(name),
  filename: filename === undefined ? undefined : text(filename),
  type: filename === undefined ? undefined : "application/octet-stream",
  extra: undefined,
  content: typeof value === "string" ? text(value) : value,
  bare: false,
});

function partBytes(part: Part, boundary: string, eol: string): Buffer {
  const head: Buffer[] = [text(`--${boundary}${eol}`)];
  if (!part.bare) {
    head.push(text("Content-Disposition: form-data"));
    if (part.name !== undefined) head.push(text("; name="), quoted(part.name));
    if (part.filename !== undefined) head.push(text("; filename="), quoted(part.filename));
    head.push(text(eol));
  }
  if (part.type !== undefined) head.push(text(`Content-Type: ${part.type}${eol}`));
  if (part.extra !== undefined) head.push(text(`${part.extra}${eol}`));
  return Buffer.concat([...head, text(eol), part.content, text(eol)]);
}

/** The raw body and Content-Type of a form shape. */
function buildForm(shape: FormShape): { contentType: string; body: Buffer } {
  // Each kind: the boundary the parts are written with, and the Content-Type sent.
  const kinds: Record<FormShape["boundary"], [string, string]> = {
    normal: ["zonafuzz0123456789", "multipart/form-data; boundary=zonafuzz0123456789"],
    missing: ["zonafuzz", "multipart/form-data;"],
    empty: ["", "multipart/form-data; boundary="],
    quoted: ["zona fuzz", 'multipart/form-data; boundary="zona fuzz"'],
    long: ["b".repeat(200), `multipart/form-data; boundary=${"b".repeat(200)}`],
    duplicate: ["first", "multipart/form-data; boundary=first; boundary=second"],
    mismatch: ["written", "multipart/form-data; boundary=declared"],
    odd: ["'()+_,-./:=?", `multipart/form-data; boundary="'()+_,-./:=?"`],
  };
  const [boundary, contentType] = kinds[shape.boundary];
  const eol = shape.ending === "lf-only" ? "\n" : CRLF;
  const many = Array.from({ length: shape.manyFields }, (_, index) => field(`f${index}`, "x"));
  const chunks = [...shape.parts, ...many].map((part) => partBytes(part, boundary, eol));
  if (shape.ending === "preamble") chunks.unshift(text(`garbage before the first boundary${eol}`));
  if (shape.ending !== "no-closing" && shape.ending !== "cut") chunks.push(text(`--${boundary}--${eol}`));
  if (shape.ending === "epilogue") chunks.push(text("garbage after the end"));
  let body = Buffer.concat(chunks);
  if (shape.ending === "cut") body = body.subarray(0, shape.cut % (body.length + 1));
  return { contentType, body };
}

const nonUtf8 = fc
  .uint8Array({ minLength: 1, maxLength: 12 })
  .map((bytes) => Buffer.from([0xff, 0xc0, ...bytes]));

/** A hostile part: any name (known, none, empty, not UTF-8, huge), file or not, any type, any size. */
function hostilePart(known: readonly string[]): fc.Arbitrary<Part> {
  return fc.record({
    name: fc.oneof(
      fc.constantFrom(...known).map(text),
      fc.constant(undefined),
      fc.constant(text("")),
      nonUtf8,
      fc.string({ maxLength: 40 }).map((value) => text(value.replaceAll('"', ""))),
      fc.constant(text("n".repeat(20_000))),
    ),
    filename: fc.option(
      fc.oneof(
        fc
          .constantFrom("a.wav", "notes.txt", "", "../../etc/passwd", "a\u0000b.txt", "x".repeat(5000))
          .map(text),
        nonUtf8,
      ),
      { nil: undefined },
    ),
    type: fc.option(
      fc.constantFrom(
        "audio/wav",
        "text/plain; charset=utf-8",
        "application/octet-stream",
        "nonsense",
        "multipart/mixed; boundary=inner",
        "",
      ),
      { nil: undefined },
    ),
    extra: fc.oneof(
      { weight: 3, arbitrary: fc.constant(undefined) },
      fc.integer({ min: 1000, max: 200_000 }).map((size) => `X-Pad: ${"p".repeat(size)}`),
      fc.constantFrom("Content-Transfer-Encoding: base64", "no colon here", ": empty name"),
    ),
    content: fc.oneof(
      fc.constant(Buffer.alloc(0)),
      fc.uint8Array({ maxLength: 3000 }).map((bytes) => Buffer.from(bytes)),
      fc.constant(WAV),
      fc.constantFrom("asr-1", "asr-1-hd", "it", "verbose_json", "word", "5", "true", "A fox").map(text),
      fc.integer({ min: 1, max: 80_000 }).map((size) => text("t".repeat(size))),
    ),
    bare: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
  });
}

/** A form: the endpoint's valid parts (or not), hostile parts, and a broken whole. */
function formShape(valid: Part[], known: readonly string[]): fc.Arbitrary<FormShape> {
  return fc.record({
    parts: fc
      .tuple(
        fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)),
        fc.oneof(
          { weight: 2, arbitrary: fc.constant([]) },
          fc.array(hostilePart(known), { minLength: 1, maxLength: 4 }),
        ),
        fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
      )
      .map(([keepValid, hostile, bareFirst]) => {
        const parts = [...(keepValid ? valid : []), ...hostile];
        if (bareFirst && parts[0]) parts[0] = { ...parts[0], bare: true };
        return parts;
      }),
    boundary: fc.oneof(
      { weight: 8, arbitrary: fc.constant("normal" as const) },
      {
        weight: 4,
        arbitrary: fc.constantFrom("missing", "empty", "quoted", "long", "duplicate", "mismatch", "odd"),
      },
    ),
    ending: fc.oneof(
      { weight: 6, arbitrary: fc.constant("complete" as const) },
      { weight: 5, arbitrary: fc.constantFrom("no-closing", "cut", "lf-only", "preamble", "epilogue") },
    ),
    cut: fc.nat(),
    manyFields: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, fc.integer({ min: 60, max: 600 })),
  });
}

/** The multipart endpoints (src/routes/v1/audio.ts, videos.ts; src/routes/app/audio.ts, knowledge-bases.ts). */
const ENDPOINTS: Array<{
  name: string;
  path: string;
  surface: ErrorSurface;
  valid: Part[];
  known: string[];
  /** The valid form answers 2xx. */
  works: boolean;
}> = [
  {
    name: "POST /v1/audio/transcriptions",
    path: "/v1/audio/transcriptions",
    surface: "key",
    valid: [field("model", "asr-1"), field("response_format", "json"), field("file", WAV, "a.wav")],
    known: "file model language prompt response_format temperature timestamp_granularities[]".split(" "),
    works: true,
  },
  {
    name: "POST /v1/videos (form, as the SDKs send it)",
    path: "/v1/videos",
    surface: "key",
    valid: [field("prompt", "A fox in the snow"), field("seconds", "5"), field("size", "1280x704")],
    known: ["prompt", "model", "seconds", "size", "seed", "input_reference"],
    works: true,
  },
  {
    name: "POST /api/v1/audio/transcribe",
    path: "/api/v1/audio/transcribe",
    surface: "app",
    valid: [field("model", "asr-1"), field("with_segments", "true"), field("audio", WAV, "a.wav")],
    known: ["audio", "model", "language", "prompt", "with_segments"],
    works: true,
  },
  {
    name: "POST /api/v1/rag/kb/{slug}/docs",
    path: "/api/v1/rag/kb/{slug}/docs",
    surface: "app",
    valid: [field("file", text("Foxes eat mice and berries."), "notes.txt")],
    known: ["file", "name"],
    works: true,
  },
  {
    name: "POST /v1/images/edits (unsupported)",
    path: "/v1/images/edits",
    surface: "key",
    valid: [field("prompt", "x"), field("image", WAV, "a.png")],
    known: ["image", "prompt", "mask"],
    works: false,
  },
  {
    name: "POST /v1/audio/translations (unsupported)",
    path: "/v1/audio/translations",
    surface: "key",
    valid: [field("model", "asr-1"), field("file", WAV, "a.wav")],
    known: ["file", "model"],
    works: false,
  },
];

type Form = { contentType: string; body: Buffer };

/** The files the app's upload folder holds now (it is made on the first upload). */
function uploadsLeft(s: KbStack): string[] {
  const folder = uploadFolderOf(s.t.app);
  return folder && existsSync(folder) ? readdirSync(folder) : [];
}

/** Waits until no upload is left (a request cut off is cleaned up a moment after it ends). */
async function expectNoUploadsLeft(s: KbStack): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (uploadsLeft(s).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(uploadsLeft(s)).toEqual([]);
}

describe("Multipart forms on both APIs (spec Errors / Shapes): broken forms never give a 500 nor leave a file", () => {
  let s: KbStack;
  let fakes: {
    tei: FakeTeiServer;
    chat: FakeOpenAiServer;
    whisper: FakeWhisperServer;
    moderation: FakeModerationServer;
    videos: FakeVideosServer;
  };
  let key = "";
  let folder: string | undefined;
  const tally = new StatusTally();
  // The app's per-user limits (10 uploads a minute) are counted per user: a fresh one now and then.
  const state: { user?: AppUserHandle; slug: string; sent: number } = { slug: "", sent: 0 };
  const fresh = async () => {
    state.user = await s.user();
    state.slug = await s.createBase(state.user, `Uploads ${state.sent}`);
  };

  beforeAll(async () => {
    fakes = {
      tei: new FakeTeiServer({ wordEmbeddings: true }),
      chat: new FakeOpenAiServer(),
      whisper: new FakeWhisperServer(),
      moderation: new FakeModerationServer(),
      videos: new FakeVideosServer({ jobMs: 100 }),
    };
    const [tei, , whisper, moderation, videos] = await Promise.all([
      fakes.tei.start(),
      fakes.chat.start(),
      fakes.whisper.start(),
      fakes.moderation.start(),
      fakes.videos.start(),
    ]);
    s = await startKbStack({
      fakes: { tei: fakes.tei, chat: fakes.chat },
      config: {
        installation: { zones: [{ id: "ch-ti" }] },
        tiers: { slow: { multiplier: 1, requests_per_minute: 1_000_000 } },
        rate_limits: { endpoint_limits: { audio_transcriptions: 1_000_000, video_create: 1_000_000 } },
        engines: { video_poll_interval_seconds: 0.02 },
        models: [
          { id: "gemma3.8-27b", kind: "chat" },
          { id: "bge-m3", kind: "embedding" },
          { id: "asr-1", kind: "asr" },
          { id: "wan-2.2-5b-fast", kind: "video" },
        ],
        machines: [
          { name: "tei", zone: "ch-ti", protocol: "tei", url: tei.url, models: ["bge-m3"] },
          { name: "whisper", zone: "ch-ti", protocol: "whisper", url: whisper.url, models: ["asr-1"] },
          { name: "moderation", zone: "ch-ti", protocol: "moderation", url: moderation.url },
          { name: "videos", zone: "ch-ti", protocol: "videos", url: videos.url, models: ["wan-2.2-5b-fast"] },
        ],
      },
    });
    key = (await s.t.newKey()).key;
    await fresh();
  }, 60_000);

  afterAll(async () => {
    tally.print(`multipart, ${RUNS} cases per endpoint, seed ${FUZZ_SEED}`);
    await s?.close();
    await Promise.all(Object.values(fakes ?? {}).map((fake) => fake.close()));
    // The app's upload folder goes with it.
    if (folder) expect(existsSync(folder)).toBe(false);
  });

  const send = async (endpoint: (typeof ENDPOINTS)[number], form: { contentType: string; body: Buffer }) => {
    state.sent += 1;
    if (endpoint.surface === "app" && state.sent % 8 === 0) await fresh();
    const token = endpoint.surface === "app" ? state.user?.token : key;
    const response = await s.t.fetch(endpoint.path.replace("{slug}", state.slug), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": form.contentType },
      body: new Uint8Array(form.body),
      signal: AbortSignal.timeout(20_000),
    });
    return { response, text: await response.text() };
  };

  it.each(
    ENDPOINTS.filter((endpoint) => endpoint.works),
  )("$name: the valid form the fuzz starts from is answered 2xx", async (endpoint) => {
    const form = buildForm({
      parts: endpoint.valid,
      boundary: "normal",
      ending: "complete",
      cut: 0,
      manyFields: 0,
    });
    const { response, text } = await send(endpoint, form);
    expect(response.status, text.slice(0, 300)).toBeLessThan(300);
    folder ??= uploadFolderOf(s.t.app);
    await expectNoUploadsLeft(s);
  });

  it.each(
    ENDPOINTS,
  )("$name: missing, duplicate and odd boundaries, cut bodies, huge part headers, many parts, nameless parts, empty files, non-UTF-8 names, repeated fields: no 500, errors in the API's shape, no file left", async (endpoint) => {
    await fc.assert(
      fc.asyncProperty(formShape(endpoint.valid, endpoint.known), async (shape) => {
        const { response, text } = await send(endpoint, buildForm(shape));
        tally.add(endpoint.name, response.status, text);
        expectSaneAnswer(endpoint.surface, response.status, text, response.headers.get("content-type"));
        await expectNoUploadsLeft(s);
      }),
      { seed: FUZZ_SEED, numRuns: RUNS },
    );
    await expectHealthy(s.t);
  }, 300_000);

  const valid = () =>
    buildForm({
      parts: ENDPOINTS[0]?.valid ?? [],
      boundary: "normal",
      ending: "complete",
      cut: 0,
      manyFields: 0,
    });
  const head = (length: number | string, contentType: string) =>
    Buffer.from(
      `POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: ${contentType}\r\nContent-Length: ${length}\r\n\r\n`,
    );

  it.each([
    {
      lie: "Content-Length larger than the body, then the client hangs up: no answer is due",
      bytes: (form: Form) => Buffer.concat([head(form.body.length + 100_000, form.contentType), form.body]),
      options: { hangUpMs: 500 },
      expected: [] as number[],
    },
    {
      // The rest is read as a second request, which is not HTTP: Node answers it 400 and closes,
      // which may come before the answer to the first.
      lie: "Content-Length smaller than the body: the rest is a second request, refused 400",
      bytes: (form: Form) => Buffer.concat([head(form.body.length - 200, form.contentType), form.body]),
      options: {},
      expected: [400],
    },
    {
      lie: "Content-Length of a petabyte: 413 at once, from the declared length",
      bytes: (form: Form) => Buffer.concat([head(10 ** 15, form.contentType), form.body]),
      options: { firstOnly: true },
      expected: [413],
    },
    {
      lie: "Content-Length not a number: 400",
      bytes: (form: Form) => Buffer.concat([head("12abc", form.contentType), form.body]),
      options: {},
      expected: [400],
    },
  ])("POST /v1/audio/transcriptions, $lie; the upload removed, the server well", async (probe) => {
    const answer = await rawExchange(s.t.url, probe.bytes(valid()), probe.options);
    const statuses = statusesOf(answer);
    expect(statuses.slice(-1)).toEqual(probe.expected);
    expect(
      statuses.every((status) => status === probe.expected[0]),
      answer.slice(0, 300),
    ).toBe(true);
    if (probe.expected.length > 0) {
      const first = firstBody(answer);
      expectSaneAnswer("key", first.status, first.body, first.type);
    }
    await expectNoUploadsLeft(s);
    await expectHealthy(s.t);
  });
});
