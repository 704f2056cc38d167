import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACCEPTED_AUDIO_TYPES } from "../../src/media/audio-format.ts";
import { type AppUserHandle, signedInUser } from "../app/app-helpers.ts";
import { type AudioStack, startAudioStack } from "./audio-stack.ts";

// A valid 1x1 PNG, written out by hand.
const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082",
  "hex",
);
// Bytes that match no signature and are no text (a fixed sequence, so that every run sends the same).
const BINARY = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 131) % 256));

// Spec "Transcription": "A refused file gives 400, type `invalid_request_error`, and a message naming
// the detected type and the accepted formats." Named for every refused file, text included.
const REFUSED: Array<[string, Buffer, string]> = [
  ["plain text", Buffer.from("this is not audio at all, just words\n".repeat(20)), "text/plain"],
  ["UTF-8 text with accents", Buffer.from("Però è così: città, perché, più.\n".repeat(10)), "text/plain"],
  [
    "an HTML page",
    Buffer.from("<!DOCTYPE html>\n<html><head><title>x</title></head><body><p>hello</p></body></html>\n"),
    "text/html",
  ],
  [
    "an HTML fragment without doctype",
    Buffer.from("\n  <html lang=it><body>ciao</body></html>"),
    "text/html",
  ],
  [
    "a JSON document",
    Buffer.from(JSON.stringify({ text: "not audio", items: [1, 2, 3] })),
    "application/json",
  ],
  ["a PNG image", PNG, "image/png"],
  [
    "a PDF document",
    Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"),
    "application/pdf",
  ],
  ["binary data of no known kind", BINARY, "unknown binary data"],
];

describe("Transcription: a refused file is named by its detected type, on both endpoints (spec: Transcription)", () => {
  let s: AudioStack;
  let user: AppUserHandle;
  beforeAll(async () => {
    s = await startAudioStack();
    user = await signedInUser(s.t);
  });
  afterAll(() => s.close());

  const message = (text: string, detected: string) => {
    expect(text).toContain(`content is ${detected},`);
    for (const type of ACCEPTED_AUDIO_TYPES) expect(text).toContain(type);
  };

  it.each(REFUSED)("key API: %s named as %s, with the accepted formats", async (_name, bytes, detected) => {
    const answer = await s.transcribe(bytes, {}, "speech.mp3");
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ type: "invalid_request_error", param: "file" });
    message(answer.body.error.message, detected);
    expect(s.zoneWhisper.requests).toHaveLength(0);
    expect(s.fallbackWhisper.requests).toHaveLength(0);
  });

  it.each(
    REFUSED,
  )("app API /audio/transcribe: %s named as %s, with the accepted formats", async (_name, bytes, detected) => {
    const body = new FormData();
    body.append("audio", new Blob([new Uint8Array(bytes)], { type: "audio/wav" }), "speech.wav");
    const response = await user.fetch("/audio/transcribe", { method: "POST", body });
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: { code: string; message: string } };
    expect(answer.error.code).toBe("invalid_file_format");
    message(answer.error.message, detected);
    expect(s.zoneWhisper.requests).toHaveLength(0);
    expect(s.fallbackWhisper.requests).toHaveLength(0);
  });
});
