import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { uploadFolderOf } from "../../src/http/multipart-upload.ts";
import { toneWav } from "../media/wav-fixtures.ts";
import { type AudioStack, fixture, startAudioStack } from "./audio-stack.ts";

let s: AudioStack;
const TONE = toneWav({ dbfs: -20, seconds: 1 });

beforeAll(async () => {
  s = await startAudioStack();
});
afterAll(() => s.close());
beforeEach(() => {
  s.zoneWhisper.clearRequests();
  s.fallbackWhisper.clearRequests();
});

/** The files in this app's own upload folder (other apps and programs have theirs). */
async function leftUploads(): Promise<string[]> {
  const folder = uploadFolderOf(s.t.app);
  return folder === undefined ? [] : readdir(folder);
}

// Every request of this file has its answer before the next starts: none may leave its upload behind
// (a file is removed just after its answer was sent).
afterEach(async () => {
  await waitFor(async () => (await leftUploads()).length === 0);
  expect(await leftUploads()).toEqual([]);
});

describe("Transcription request: accepted formats, detected from content", () => {
  const zoneFormats: Array<[string, string]> = [
    ["tone-id3.mp3", "audio/mpeg"],
    ["tone-plain.mp3", "audio/mpeg"],
    ["tone.ogg", "audio/ogg"],
    ["tone.opus", "audio/ogg"],
    ["tone.flac", "audio/flac"],
    ["tone.m4a", "audio/mp4"],
    ["tone.mp4", "audio/mp4"],
    ["tone.webm", "audio/webm"],
    ["tone-live.webm", "audio/webm"],
  ];
  it.each(zoneFormats)("%s is accepted and transcribed in the key's zone (X-Zona)", async (name, mime) => {
    // The name and the declared type say nothing: the content decides.
    const answer = await s.transcribe(
      new Blob([new Uint8Array(await fixture(name))], { type: "text/plain" }),
      {},
      "x.txt",
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("ch-ti");
    expect(answer.body.text).toMatch(/^Fake transcript/);
    const upload = s.zoneWhisper.lastUpload;
    expect(upload.files[0]?.size).toBe((await fixture(name)).length);
    expect(upload.files[0]?.mimeType).toBe(mime);
  });

  it("a WAV is accepted whatever its name", async () => {
    const answer = await s.transcribe(TONE, {}, "notes.pdf");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-zona")).toBe("ch-ti");
  });

  // The refused formats, on both endpoints: refused-formats.test.ts.
});

describe("Transcription request: fields", () => {
  const refusedFields: Array<[string, Record<string, string | string[]>, string]> = [
    ["model other than asr-1 / asr-1-hd", { model: "whisper-1" }, "model"],
    ["empty model", { model: "" }, "model"],
    ["response_format srt", { response_format: "srt" }, "response_format"],
    ["response_format vtt", { response_format: "vtt" }, "response_format"],
    ["response_format xml", { response_format: "xml" }, "response_format"],
    ["temperature above 1", { temperature: "1.5" }, "temperature"],
    ["temperature below 0", { temperature: "-0.1" }, "temperature"],
    ["temperature not a number", { temperature: "warm" }, "temperature"],
    ["prompt over 1,024 characters", { prompt: "p".repeat(1025) }, "prompt"],
    ["language not a two-letter code", { language: "italian" }, "language"],
    ["word timings with json", { "timestamp_granularities[]": "word" }, "timestamp_granularities"],
    [
      "word timings with text",
      { "timestamp_granularities[]": "segment", response_format: "text" },
      "timestamp_granularities",
    ],
    [
      "unknown granularity",
      { "timestamp_granularities[]": "sentence", response_format: "verbose_json" },
      "timestamp_granularities",
    ],
  ];
  it.each(refusedFields)("%s: 400 naming the field, nothing transcribed", async (_name, fields, param) => {
    const answer = await s.transcribe(TONE, fields, "a.wav");
    expect(answer.status).toBe(400);
    expect(answer.body.error.type).toBe("invalid_request_error");
    expect(answer.body.error.param).toBe(param);
    expect(s.zoneWhisper.requests).toHaveLength(0);
    expect(s.fallbackWhisper.requests).toHaveLength(0);
  });

  it("a prompt of exactly 1,024 characters is accepted", async () => {
    const answer = await s.transcribe(TONE, { prompt: "p".repeat(1024) }, "a.wav");
    expect(answer.status).toBe(200);
  });

  it("empty prompt, language and response_format count as absent; unlisted fields are ignored", async () => {
    const answer = await s.transcribe(
      TONE,
      { prompt: "", language: "", response_format: "", colour: "blue" },
      "a.wav",
    );
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body)).toEqual(["text"]);
    // No prompt: the zone machine took it (a prompt would have sent it to the fallback server).
    expect(answer.headers.get("x-zona")).toBe("ch-ti");
    const fields = Object.fromEntries(s.zoneWhisper.lastUpload.fields);
    expect(fields.prompt).toBeUndefined();
    expect(fields.language).toBeUndefined();
    expect(fields.colour).toBeUndefined();
  });

  it("model, language and temperature reach the engine; verbose_json is always asked upstream", async () => {
    const answer = await s.transcribe(TONE, { model: "asr-1", language: "DE", temperature: "0.4" }, "a.wav");
    expect(answer.status).toBe(200);
    const fields = Object.fromEntries(s.zoneWhisper.lastUpload.fields);
    expect(fields).toMatchObject({
      model: "asr-1",
      language: "de",
      temperature: "0.4",
      response_format: "verbose_json",
    });
  });

  it("a form without a file is 400 naming file", async () => {
    const answer = await s.transcribe(undefined, { model: "asr-1" });
    expect(answer.status).toBe(400);
    expect(answer.body.error.param).toBe("file");
  });

  it("a body that is not a multipart form is 400 naming file", async () => {
    const response = await s.t.fetch("/v1/audio/transcriptions", {
      method: "POST",
      headers: { authorization: `Bearer ${s.key}`, "content-type": "application/json" },
      body: JSON.stringify({ file: "a.wav" }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe("file");
  });
});

describe("Limits: audio file 25 MB, whole request 64 MB; temporary files removed", () => {
  it("just over 25 MB: 400 saying the file is too large, without the kilobytes", async () => {
    const answer = await s.transcribe(Buffer.alloc(25_000_001, 1), {}, "big.wav");
    expect(answer.status).toBe(400);
    expect(answer.body.error.type).toBe("invalid_request_error");
    expect(answer.body.error.param).toBe("file");
    expect(answer.body.error.message).toMatch(/too large/);
    expect(answer.body.error.message).not.toMatch(/kilobytes/);
    expect(uploadFolderOf(s.t.app)).toBeDefined();
  });

  it("over 25,600 kilobytes: 400 whose message states the size and the limit", async () => {
    const answer = await s.transcribe(Buffer.alloc(26_300_000, 1), {}, "big.wav");
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toMatch(/25,684 kilobytes.*25,600 kilobytes/);
  });

  it("over 50 MB: 400 that only says the upload failed", async () => {
    const answer = await s.transcribe(Buffer.alloc(53_000_000, 1), {}, "huge.wav");
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toBe("The upload failed.");
    expect(uploadFolderOf(s.t.app)).toBeDefined();
    expect(s.zoneWhisper.requests).toHaveLength(0);
  });

  it("a whole request over 64 MB: 413 with an HTML page", async () => {
    const answer = await s.transcribe(Buffer.alloc(65 * 1024 * 1024, 1), {}, "huge.wav");
    expect(answer.status).toBe(413);
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    expect(answer.text).toMatch(/<html/);
  });

  it("an upload cut off by the client leaves no temporary file", async () => {
    const boundary = "zonaboundary";
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`;
    const { request } = await import("node:http");
    await new Promise<void>((resolve) => {
      const req = request(`${s.t.url}/v1/audio/transcriptions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${s.key}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": "100000",
        },
      });
      req.on("error", () => resolve());
      req.write(Buffer.concat([Buffer.from(head), TONE.subarray(0, 2000)]));
      // Cut off once the upload is being written, so that there is a file to remove.
      void waitFor(async () => (await leftUploads()).length === 1).then(() => {
        req.destroy();
        resolve();
      });
    });
    await waitFor(async () => (await leftUploads()).length === 0);
    expect(await leftUploads()).toEqual([]);
  });

  it("the app's upload folder is its own, and is removed when the app closes", async () => {
    const other = await startAudioStack();
    let folder: string | undefined;
    try {
      expect((await other.transcribe(TONE, {}, "a.wav")).status).toBe(200);
      folder = uploadFolderOf(other.t.app);
      expect(folder).toBeDefined();
      expect(folder).not.toBe(uploadFolderOf(s.t.app));
      expect(existsSync(folder as string)).toBe(true);
    } finally {
      await other.close();
    }
    expect(existsSync(folder as string)).toBe(false);
  });
});

/** Polls `done` until it holds (at most about 10 seconds). */
async function waitFor(done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await done()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}
