/**
 * A file part with an empty name (`filename=""`) and real content is the file: browsers and curl
 * send a file without a name that way, with its own type (`application/pdf`, `audio/wav`) or as
 * application/octet-stream. It is named after what its content is (`document.pdf`, `audio.wav`).
 * Only an absent part, or an empty part with an empty name (a form sent with no file chosen), is
 * a missing file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppUserHandle } from "../app/app-helpers.ts";
import { FakeOpenAiServer, FakeTeiServer, FakeWhisperServer, toneWav } from "../fakes/index.ts";
import { documentFixture, type KbStack, startKbStack } from "../knowledge/kb-stack.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are checked by assertions, not by types.
type Json = any;

const BOUNDARY = "namelessfileparts0123";
const WAV = toneWav({ seconds: 0.5 });

/** A multipart body written by hand, so that the part's headers are exactly what a browser or curl sends. */
function multipart(
  parts: Array<{ name: string; filename?: string; type?: string; content: Buffer | string }>,
) {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const filename = part.filename === undefined ? "" : `; filename="${part.filename}"`;
    const type = part.type === undefined ? "" : `Content-Type: ${part.type}\r\n`;
    chunks.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"${filename}\r\n${type}\r\n`,
      ),
      Buffer.from(part.content),
      Buffer.from("\r\n"),
    );
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return {
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
    body: Buffer.concat(chunks),
  };
}

async function read(response: Response): Promise<{ status: number; body: Json }> {
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

let s: KbStack;
let whisper: FakeWhisperServer;
let key = "";

beforeAll(async () => {
  const tei = new FakeTeiServer({ wordEmbeddings: true });
  const chat = new FakeOpenAiServer();
  whisper = new FakeWhisperServer();
  await Promise.all([tei.start(), chat.start(), whisper.start()]);
  s = await startKbStack({
    fakes: { tei, chat },
    config: {
      installation: { zones: [{ id: "ch-ti" }] },
      tiers: { slow: { multiplier: 1, requests_per_minute: 1_000_000 } },
      models: [
        { id: "gemma3.8-27b", kind: "chat" },
        { id: "bge-m3", kind: "embedding" },
        { id: "asr-1", kind: "asr" },
      ],
      machines: [
        { name: "tei", zone: "ch-ti", protocol: "tei", url: tei.url, models: ["bge-m3"] },
        { name: "chat", zone: "ch-ti", protocol: "openai", url: chat.url, models: ["gemma3.8-27b"] },
        { name: "whisper", zone: "ch-ti", protocol: "whisper", url: whisper.url, models: ["asr-1"] },
      ],
    },
  });
  key = (await s.t.newKey()).key;
}, 60_000);

afterAll(async () => {
  await s?.close();
  await Promise.all([s?.tei.close(), s?.chat.close(), whisper?.close()]);
});

describe('docs/knowledge-bases.md "App API": a document uploaded with an empty file name is named after its format', () => {
  let user: AppUserHandle;
  let slug = "";
  beforeAll(async () => {
    user = await s.user();
    slug = await s.createBase(user, "Nameless uploads");
  });

  it.each([
    {
      label: "a PDF sent as application/pdf (curl)",
      fixture: "two-pages.pdf",
      type: "application/pdf",
      format: "pdf",
    },
    {
      label: "a DOCX sent with its Office type (a browser)",
      fixture: "headings.docx",
      type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      format: "docx",
    },
    {
      label: "Markdown sent as text/markdown",
      fixture: "notes.md",
      type: "text/markdown",
      format: "markdown",
    },
    {
      label: "text sent as application/octet-stream",
      fixture: "notes.txt",
      type: "application/octet-stream",
      format: "txt",
    },
    { label: "text sent without a type", fixture: "notes.txt", type: undefined, format: "txt" },
  ])("$label: 202, format $format, listed with the name it was given", async ({ fixture, type, format }) => {
    const filename = `document.${format === "markdown" ? "md" : format}`;
    const bytes = documentFixture(fixture);
    const init = multipart([{ name: "file", filename: "", ...(type ? { type } : {}), content: bytes }]);
    const answer = await read(await user.fetch(`/rag/kb/${slug}/docs`, init));
    expect(answer).toMatchObject({ status: 202, body: { filename, format, size_bytes: bytes.length } });
    const list = await read(await user.fetch(`/rag/kb/${slug}/docs`));
    expect(list.body.data).toContainEqual(expect.objectContaining({ id: answer.body.id, filename, format }));
  });

  it("a form sent with no file chosen (an empty part with an empty name) is still a missing file: 422", async () => {
    const init = multipart([{ name: "file", filename: "", type: "application/pdf", content: "" }]);
    const answer = await read(await user.fetch(`/rag/kb/${slug}/docs`, init));
    expect(answer).toEqual({
      status: 422,
      body: {
        message: expect.any(String),
        error: { code: "validation_error", message: expect.any(String) },
        errors: { file: ["The file field is required."] },
      },
    });
  });

  it('a part whose content only mentions filename="" is read unchanged', async () => {
    const text = 'Content-Disposition: form-data; name="file"; filename=""\r\n\r\nStill plain notes.\n';
    const init = multipart([{ name: "file", filename: "headers.txt", type: "text/plain", content: text }]);
    const answer = await read(await user.fetch(`/rag/kb/${slug}/docs`, init));
    expect(answer).toMatchObject({ status: 202, body: { filename: "headers.txt", size_bytes: text.length } });
  });
});

describe('spec "Transcription": an audio file sent with an empty file name is transcribed', () => {
  it('POST /v1/audio/transcriptions, audio/wav with filename="": 200; the engine gets it as audio.wav', async () => {
    const init = multipart([
      { name: "model", content: "asr-1" },
      { name: "file", filename: "", type: "audio/wav", content: WAV },
    ]);
    const answer = await read(
      await s.t.fetch("/v1/audio/transcriptions", {
        ...init,
        headers: { ...init.headers, authorization: `Bearer ${key}` },
      }),
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.text).toMatch(/^Fake transcript/);
    const file = whisper.lastUpload.files[0];
    expect(file).toMatchObject({ field: "file", filename: "audio.wav", size: WAV.length });
  });

  it('POST /api/v1/audio/transcribe, audio/wav with filename="": 200', async () => {
    const user = await s.user();
    const init = multipart([{ name: "audio", filename: "", type: "audio/wav", content: WAV }]);
    const answer = await read(await user.fetch("/audio/transcribe", init));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.text).toMatch(/^Fake transcript/);
    expect(whisper.lastUpload.files[0]).toMatchObject({ filename: "audio.wav", size: WAV.length });
  });

  it("an empty part with an empty name is a missing file: 400 'file' is required", async () => {
    const init = multipart([{ name: "file", filename: "", type: "application/octet-stream", content: "" }]);
    const answer = await read(
      await s.t.fetch("/v1/audio/transcriptions", {
        ...init,
        headers: { ...init.headers, authorization: `Bearer ${key}` },
      }),
    );
    expect(answer).toMatchObject({
      status: 400,
      body: {
        error: { type: "invalid_request_error", param: "file", message: expect.stringMatching(/required/) },
      },
    });
  });
});
