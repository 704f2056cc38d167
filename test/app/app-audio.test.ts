import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AudioStack, startAudioStack } from "../audio/audio-stack.ts";
import { silenceWav, toneWav } from "../media/wav-fixtures.ts";
import { type AppUserHandle, signedInUser } from "./app-helpers.ts";

let s: AudioStack;
let user: AppUserHandle;

beforeAll(async () => {
  s = await startAudioStack();
  user = await signedInUser(s.t, { language: "de" });
});
afterAll(() => s.close());

function form(file: Buffer | undefined, fields: Record<string, string> = {}): FormData {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  if (file) body.append("audio", new Blob([new Uint8Array(file)]), "a.wav");
  return body;
}

describe("App audio endpoints: GET /audio/voices", () => {
  it("voices with name, language, gender, and defaults_by_language for it, en, de, fr, rm (rm -> the Italian default)", async () => {
    const response = await user.fetch("/audio/voices");
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      voices: unknown[];
      defaults_by_language: Record<string, string>;
    };
    expect(body.voices).toContainEqual({ name: "paola", language: "it", gender: "female" });
    expect(body.voices).toHaveLength(6);
    expect(body.defaults_by_language).toEqual({
      it: "paola",
      en: "amy",
      de: "thorsten",
      fr: "siwis",
      rm: "paola",
    });
  });

  it("needs a user token: none is 401 unauthorized, an API key is 401", async () => {
    const none = await s.t.fetch("/api/v1/audio/voices");
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
    const key = await s.t.fetch("/api/v1/audio/voices", { headers: { authorization: `Bearer ${s.key}` } });
    expect(key.status).toBe(401);
  });

  it("an unverified email is 403 email_unverified", async () => {
    const unverified = await signedInUser(s.t, { verified: false });
    const response = await unverified.fetch("/audio/voices");
    expect(response.status).toBe(403);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("email_unverified");
  });
});

describe("App audio endpoints: POST /audio/transcribe (differences from the key API)", () => {
  it("text, language, duration_seconds, model, segments; X-Zona of the zone machine", async () => {
    s.zoneWhisper.setTranscript({
      text: "Guten Tag.",
      language: "de",
      segments: [{ start: 0.2, end: 1.1, text: " Guten Tag." }],
    });
    const response = await user.fetch("/audio/transcribe", {
      method: "POST",
      body: form(toneWav({ dbfs: -20, seconds: 2 }), { with_segments: "true" }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-zona")).toBe("ch-ti");
    expect(await response.json()).toEqual({
      text: "Guten Tag.",
      language: "de",
      duration_seconds: 2,
      model: "asr-1",
      segments: [{ id: 1, start: 0.2, end: 1.1, text: " Guten Tag." }],
    });
    s.zoneWhisper.setTranscript(undefined);
  });

  it("no silent-WAV check: digital silence goes to the model", async () => {
    s.zoneWhisper.clearRequests();
    const response = await user.fetch("/audio/transcribe", { method: "POST", body: form(silenceWav(1)) });
    expect(response.status).toBe(200);
    expect(s.zoneWhisper.requestsTo("/v1/audio/transcriptions")).toHaveLength(1);
  });

  it.each([
    ["model"],
    ["language"],
    ["prompt"],
    ["with_segments"],
  ])("an empty %s field is refused (422 validation_error), not read as absent", async (field) => {
    const response = await user.fetch("/audio/transcribe", {
      method: "POST",
      body: form(toneWav({ dbfs: -20, seconds: 1 }), { [field]: "" }),
    });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { error: { code: string }; errors: Record<string, string[]> };
    expect(body.error.code).toBe("validation_error");
    expect(Object.keys(body.errors)).toEqual([field]);
  });

  it("without the file in 'audio': 422 naming audio", async () => {
    const body = new FormData();
    body.append("file", new Blob([new Uint8Array(toneWav({ dbfs: -20, seconds: 1 }))]), "a.wav");
    const response = await user.fetch("/audio/transcribe", { method: "POST", body });
    expect(response.status).toBe(422);
    expect(Object.keys(((await response.json()) as { errors: object }).errors)).toEqual(["audio"]);
  });

  it("billed to the account, without a key", async () => {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const records = await s.t.admin("GET", `/usage?account_id=${user.accountId}`);
    const record = records.body.data.find((r: { endpoint: string }) => r.endpoint === "app.audio.transcribe");
    expect(record).toMatchObject({ key_id: null, account_id: user.accountId, outcome: "ok" });
  });
});

describe("App audio endpoints: POST /audio/synthesize", () => {
  it("X-Voice and X-Duration-Seconds; without language the default voice follows the account language", async () => {
    s.piper.clearRequests();
    const response = await user.post("/audio/synthesize", { text: "Guten Morgen allerseits." });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/wav");
    expect(response.headers.get("x-voice")).toBe("thorsten");
    expect(Number(response.headers.get("x-duration-seconds"))).toBeGreaterThan(0);
  });

  it("format mp3, voice alloy in fr gives siwis", async () => {
    const response = await user.post("/audio/synthesize", {
      text: "Bonjour",
      voice: "alloy",
      language: "fr",
      format: "mp3",
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("audio/mpeg");
    expect(response.headers.get("x-voice")).toBe("siwis");
  });

  it("an unknown voice: 400 invalid_voice", async () => {
    const response = await user.post("/audio/synthesize", { text: "Ciao", voice: "nobody" });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("invalid_voice");
  });

  it("a refused text: 400 input_refused", async () => {
    const response = await user.post("/audio/synthesize", { text: "forbidden words" });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("input_refused");
  });

  it.each([
    [{}, "text"],
    [{ text: "" }, "text"],
    [{ text: "Ciao", format: "ogg" }, "format"],
    [{ text: "Ciao", language: "deutsch" }, "language"],
  ])("%j: 422 validation_error naming %s", async (body, field) => {
    const response = await user.post("/audio/synthesize", body);
    expect(response.status).toBe(422);
    expect(Object.keys(((await response.json()) as { errors: object }).errors)).toEqual([field]);
  });
});

describe("App audio endpoints: engine failures", () => {
  it("App API errors: engines down -> 502 upstream_unavailable (synthesize, transcribe); check down -> 503 moderation_unavailable", async () => {
    const f = await startAudioStack();
    try {
      const u = await signedInUser(f.t);
      await f.piper.setMode("error500");
      const down = await u.post("/audio/synthesize", { text: "Ciao" });
      expect(down.status).toBe(502);
      expect(((await down.json()) as { error: { code: string } }).error.code).toBe("upstream_unavailable");
      await f.zoneWhisper.setMode("error500");
      await f.fallbackWhisper.setMode("error500");
      const transcribe = await u.fetch("/audio/transcribe", {
        method: "POST",
        body: form(toneWav({ dbfs: -20, seconds: 1 })),
      });
      expect(transcribe.status).toBe(502);
      expect(((await transcribe.json()) as { error: { code: string } }).error.code).toBe(
        "upstream_unavailable",
      );
      await f.moderation.setMode("error500");
      const check = await u.post("/audio/synthesize", { text: "Ciao" });
      expect(check.status).toBe(503);
      expect(((await check.json()) as { error: { code: string } }).error.code).toBe("moderation_unavailable");
    } finally {
      await f.close();
    }
  });
});
