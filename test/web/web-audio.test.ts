import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isMultipart } from "../fakes/fake-multipart.ts";
import { sendAndGetAnswer } from "./web-page.ts";
import { CHROMIUM, expectNoProblems, startWebStack, type WebStack } from "./web-stack.ts";

/** Generous for a loaded 2-core machine: each test signs in, records or streams, and plays audio. */
const SLOW_TEST_MS = 90_000;

// Test hooks added before the page's own script (through the browser, not the page: the CSP is
// not involved): every microphone stream handed out, and every media element played.
async function watchMedia(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const watched = window as unknown as { streams: MediaStream[]; played: HTMLMediaElement[] };
    watched.streams = [];
    watched.played = [];
    const devices = navigator.mediaDevices;
    if (devices) {
      const getUserMedia = devices.getUserMedia.bind(devices);
      devices.getUserMedia = async (constraints) => {
        const stream = await getUserMedia(constraints);
        watched.streams.push(stream);
        return stream;
      };
    }
    const play = HTMLMediaElement.prototype.play;
    HTMLMediaElement.prototype.play = function (this: HTMLMediaElement) {
      watched.played.push(this);
      return play.call(this);
    };
  });
}

/** The states of the microphone tracks handed out so far ("live" or "ended"). */
function trackStates(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    (window as unknown as { streams: MediaStream[] }).streams.flatMap((stream) =>
      stream.getTracks().map((track) => track.readyState),
    ),
  );
}

/** The last media element played: whether it is playing and how far it got. */
function lastPlayed(page: Page): Promise<{ paused: boolean; time: number; src: string } | null> {
  return page.evaluate(() => {
    const audio = (window as unknown as { played: HTMLMediaElement[] }).played.at(-1);
    return audio ? { paused: audio.paused, time: audio.currentTime, src: audio.src } : null;
  });
}

describe.skipIf(!CHROMIUM)("Web chat: dictation and read-aloud in Chromium", () => {
  let s: WebStack;
  beforeAll(async () => {
    s = await startWebStack();
  }, 60_000);
  afterAll(() => s?.close());
  beforeEach(async () => {
    await s.whisper.setMode("normal");
    await s.fallbackWhisper.setMode("normal");
    await s.piper.setMode("normal");
    s.whisper.setTranscript(undefined);
    s.fallbackWhisper.setTranscript(undefined);
    for (const fake of [s.whisper, s.fallbackWhisper, s.piper, s.chat]) fake.clearRequests();
    s.problems.length = 0;
  });

  it(
    "Dictation (spec App audio endpoints: POST /audio/transcribe, the file in `audio`): the fake microphone is recorded as WebM/Opus, the transcript lands in the message box to be edited, nothing is sent, and the microphone is released",
    async () => {
      const transcript = "Dictated words about the weather in Lugano.";
      s.whisper.setTranscript({ text: transcript });
      const page = await s.newPage();
      await watchMedia(page);
      await s.signIn(page);
      const dictate = page.getByRole("button", { name: "Dictate" });
      await expect.poll(() => dictate.getAttribute("aria-pressed")).toBe("false");

      await dictate.click();
      await expect.poll(() => dictate.getAttribute("data-state")).toBe("recording");
      expect(await dictate.getAttribute("aria-pressed")).toBe("true");
      expect(await dictate.getAttribute("title")).toBe("Stop dictation");
      expect(await trackStates(page)).toEqual(["live"]);
      // The elapsed time counts up while recording.
      await expect.poll(() => dictate.innerText(), { timeout: 10_000 }).toBe("0:02");
      await page.screenshot({ path: s.screenshotPath("dictation-recording") });

      await dictate.click();
      const input = page.locator(".composer textarea");
      await expect.poll(() => input.inputValue(), { timeout: 20_000 }).toBe(transcript);
      await expect.poll(() => dictate.getAttribute("data-state")).toBe("idle");
      expect(await dictate.getAttribute("aria-pressed")).toBe("false");
      expect(await trackStates(page)).toEqual(["ended"]);

      // Zona passed the recording on to the transcription server: one WebM file of some seconds.
      const requests = s.whisper.requestsTo("/v1/audio/transcriptions");
      expect(requests).toHaveLength(1);
      const upload = requests[0]?.body;
      if (!isMultipart(upload)) throw new Error("the whisper fake got no upload");
      const file = upload.files[0];
      expect(file?.filename).toMatch(/\.(webm|ogg)$/);
      // The EBML magic of WebM (or "OggS").
      expect(["1a45dfa3", "4f676753"]).toContain(file?.head.subarray(0, 4).toString("hex"));
      expect(file?.size).toBeGreaterThan(1000);

      // The text waits in the box: nothing was sent to the chat.
      await page.waitForTimeout(300);
      expect(s.chat.requestsTo("/v1/chat/completions")).toHaveLength(0);
      expect(await page.locator(".message.user").count()).toBe(0);
      expect(await page.locator(".composer [role=alert]").count()).toBe(0);
      // It can be edited and then sent as any message.
      await input.press("End");
      await input.pressSequentially(" Thanks");
      expect(await input.inputValue()).toBe(`${transcript} Thanks`);
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Read-aloud (spec App audio endpoints: POST /audio/synthesize without `language` takes the default voice of the account language; Voices: thorsten is the default for de): a German account hears its answer read by thorsten, as plain text, in an audio element that plays to the end",
    async () => {
      const page = await s.newPage();
      await watchMedia(page);
      await s.signIn(page, { language: "de" });
      await sendAndGetAnswer(
        page,
        "Erzähl mir **etwas** über `Zürich`.\n\n```js\nconsole.log(42);\n```\n\n- Berge",
        { echoed: false },
      );
      const answer = page.locator(".message.assistant").last();
      const read = answer.getByRole("button", { name: "Vorlesen" });
      expect(await read.getAttribute("data-state")).toBe("idle");

      await read.click();
      // While it plays the button stops it, in German.
      const playing = answer.locator("button.read-aloud");
      await expect.poll(() => playing.getAttribute("data-state"), { timeout: 20_000 }).toBe("playing");
      expect(await playing.innerText()).toBe("Vorlesen beenden");
      await expect
        .poll(async () => {
          const audio = await lastPlayed(page);
          return audio !== null && !audio.paused && audio.time > 0;
        })
        .toBe(true);
      expect((await lastPlayed(page))?.src).toMatch(/^blob:/);
      await page.screenshot({ path: s.screenshotPath("read-aloud-playing") });

      // The voice of the account language, asked by Zona (the page sent neither voice nor language).
      expect(s.piper.voicesAsked).toHaveLength(1);
      expect(s.piper.voicesAsked[0]).toMatch(/thorsten/);
      const sent = s.piper.requestsTo("/synthesize")[0]?.body as { text?: string };
      expect(sent.text).toContain("Erzähl mir etwas über Zürich.");
      expect(sent.text).toContain("Berge.");
      expect(sent.text).not.toMatch(/[*`]|console\.log/);

      // It plays to its end by itself, and the button is back to "Vorlesen".
      await expect.poll(() => playing.getAttribute("data-state"), { timeout: 20_000 }).toBe("idle");
      expect(await playing.innerText()).toBe("Vorlesen");
      expect(await answer.locator("[role=alert]").count()).toBe(0);
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Read-aloud (spec App audio endpoints: POST /audio/synthesize): a second click stops the reading, and starting another answer stops the first, so one answer plays at a time",
    async () => {
      const page = await s.newPage();
      await watchMedia(page);
      await s.signIn(page);
      // Long answers: the fake reads 0.06 s per character, so each plays for many seconds.
      await sendAndGetAnswer(page, `First answer to read. ${"The lake is calm today. ".repeat(12)}`, {
        echoed: false,
      });
      await sendAndGetAnswer(page, `Second answer to read. ${"The mountains are high. ".repeat(12)}`, {
        echoed: false,
      });
      const [first, second] = [0, 1].map((i) =>
        page.locator(".message.assistant").nth(i).locator(".read-aloud"),
      );
      if (!first || !second) throw new Error("two answers expected");

      await first.click();
      await expect.poll(() => first.getAttribute("data-state"), { timeout: 20_000 }).toBe("playing");
      await second.click();
      await expect.poll(() => second.getAttribute("data-state"), { timeout: 20_000 }).toBe("playing");
      expect(await first.getAttribute("data-state")).toBe("idle");
      const played = await page.evaluate(() =>
        (window as unknown as { played: HTMLMediaElement[] }).played.map((audio) => audio.paused),
      );
      expect(played).toEqual([true, false]);

      await second.click();
      await expect.poll(() => second.getAttribute("data-state")).toBe("idle");
      expect(await second.innerText()).toBe("Read aloud");
      expect(await lastPlayed(page)).toMatchObject({ paused: true });
      expect(s.piper.voicesAsked).toHaveLength(2);
      for (const voice of s.piper.voicesAsked) expect(voice).toMatch(/amy/);
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Dictation errors (spec App audio endpoints: POST /audio/transcribe answers 502 when no transcription server answers): the message says so in the interface language and the draft in the box is left alone; a refused microphone is explained too",
    async () => {
      await s.whisper.setMode("error500");
      await s.fallbackWhisper.setMode("error500");
      const page = await s.newPage();
      await watchMedia(page);
      await s.signIn(page, { language: "fr" });
      const input = page.locator(".composer textarea");
      await input.fill("Mon brouillon");
      const dictate = page.getByRole("button", { name: "Dicter" });
      await dictate.click();
      await expect.poll(() => dictate.getAttribute("data-state")).toBe("recording");
      await page.waitForTimeout(1200);
      await dictate.click();

      const alert = page.locator(".dictate [role=alert]");
      await alert.waitFor({ timeout: 30_000 });
      expect(await alert.innerText()).toBe(
        "La transcription n'est pas disponible pour le moment. Réessayez plus tard.",
      );
      expect(await input.inputValue()).toBe("Mon brouillon");
      expect(await dictate.getAttribute("data-state")).toBe("idle");
      expect(await trackStates(page)).toEqual(["ended"]);
      expect(s.whisper.requestsTo("/v1/audio/transcriptions").length).toBeGreaterThan(0);
      await page.screenshot({ path: s.screenshotPath("dictation-error") });
      // The message can be closed.
      await alert.getByRole("button", { name: "Fermer" }).click();
      expect(await alert.count()).toBe(0);

      // A microphone the user refused: explained, nothing sent.
      s.whisper.clearRequests();
      await page.evaluate(() => {
        navigator.mediaDevices.getUserMedia = () =>
          Promise.reject(new DOMException("Permission denied", "NotAllowedError"));
      });
      await dictate.click();
      await alert.waitFor();
      expect(await alert.innerText()).toContain("L'accès au microphone a été refusé.");
      expect(await input.inputValue()).toBe("Mon brouillon");
      expect(s.whisper.requests).toHaveLength(0);
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Dictation of silence (spec App audio endpoints: POST /audio/transcribe): an empty transcript puts nothing in the box and says no speech was recognised",
    async () => {
      s.whisper.setTranscript({ text: "" });
      const page = await s.newPage();
      await s.signIn(page);
      const dictate = page.getByRole("button", { name: "Dictate" });
      await dictate.click();
      await expect.poll(() => dictate.getAttribute("data-state")).toBe("recording");
      await page.waitForTimeout(1200);
      await dictate.click();
      const alert = page.locator(".dictate [role=alert]");
      await alert.waitFor({ timeout: 20_000 });
      expect(await alert.innerText()).toContain("No speech was recognised.");
      expect(await page.locator(".composer textarea").inputValue()).toBe("");
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );

  it(
    "Read-aloud errors (spec Speech: a refused text gives 400 input_refused; App audio endpoints): an answer the content check refuses is not read and the page says why, in the account language; a speech engine that fails is explained too",
    async () => {
      const page = await s.newPage();
      await s.signIn(page, { language: "it" });
      await sendAndGetAnswer(page, "Parlami di una cosa forbidden", { echoed: false });
      const answer = page.locator(".message.assistant").last();
      const read = answer.getByRole("button", { name: "Leggi ad alta voce" });
      await read.click();
      const alert = answer.locator("[role=alert]");
      await alert.waitFor({ timeout: 20_000 });
      expect(await alert.innerText()).toBe(
        "Questa risposta non può essere letta ad alta voce: non ha superato il controllo dei contenuti.",
      );
      expect(await read.getAttribute("data-state")).toBe("idle");
      expect(s.piper.requestsTo("/synthesize")).toHaveLength(0);

      // The speech engine fails: 502 upstream_unavailable.
      await s.piper.setMode("error500");
      await sendAndGetAnswer(page, "Parlami del lago", { echoed: false });
      const other = page.locator(".message.assistant").last();
      await other.getByRole("button", { name: "Leggi ad alta voce" }).click();
      const otherAlert = other.locator("[role=alert]");
      await otherAlert.waitFor({ timeout: 30_000 });
      expect(await otherAlert.innerText()).toBe(
        "La lettura ad alta voce non è disponibile al momento. Riprova più tardi.",
      );
      expectNoProblems(s);
    },
    SLOW_TEST_MS,
  );
});
