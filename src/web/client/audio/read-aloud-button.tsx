import { useEffect, useRef, useState } from "preact/hooks";
import { apiFetch } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import { t } from "../i18n/i18n.ts";
import { errorText } from "../ui/error-text.ts";
import "./audio.css";
import { SpeakerIcon, SpinnerIcon, StopIcon } from "./icons.tsx";
import { claimReading, type Reader, releaseReading } from "./reading-slot.ts";
import { speakableText } from "./speakable-text.ts";

type ReadState = "idle" | "loading" | "playing";

/** What to tell the user about a failed synthesis. */
function speechProblem(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === "input_refused") return t("audio.error.inputRefused");
    if (error.code === "moderation_unavailable") return t("audio.error.checkUnavailable");
    if (error.code === "network" || error.status === 429) return errorText(error);
    if (error.status >= 500) return t("audio.error.speechUnavailable");
  }
  return t("audio.error.speechFailed");
}

/** MP3 where the browser plays it (a fifth of the size), else WAV. */
function preferredFormat(): "mp3" | "wav" {
  return new Audio().canPlayType("audio/mpeg") !== "" ? "mp3" : "wav";
}

/** One reading: the request, then the audio element and its `blob:` address. */
interface Reading {
  abort: AbortController;
  audio?: HTMLAudioElement;
  url?: string;
}

/**
 * Reads an answer aloud (`POST /audio/synthesize` with its Markdown as plain text; no voice or
 * language, so the server takes the default voice of the account language). Click again to stop;
 * one answer plays at a time on the page.
 */
export function ReadAloudButton(props: { text: string }) {
  const [state, setState] = useState<ReadState>("idle");
  const [problem, setProblem] = useState<string>();
  const reading = useRef<Reading | undefined>(undefined);
  const mounted = useRef(true);

  // The reader this button is on the page's single reading slot; it outlives renders.
  const reader = useRef<Reader>({ cancel: () => {} });
  const finish = (failure?: string) => {
    const current = reading.current;
    reading.current = undefined;
    if (current) {
      current.abort.abort();
      if (current.audio) {
        current.audio.pause();
        current.audio.removeAttribute("src");
        current.audio.load();
      }
      if (current.url) URL.revokeObjectURL(current.url);
    }
    releaseReading(reader.current);
    if (!mounted.current) return;
    setState("idle");
    if (failure !== undefined) setProblem(failure);
  };
  reader.current.cancel = () => finish();

  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
      finish();
    };
  }, []);

  const start = async () => {
    setProblem(undefined);
    const text = speakableText(props.text);
    if (text === "") {
      setProblem(t("audio.error.nothingToRead"));
      return;
    }
    claimReading(reader.current);
    const current: Reading = { abort: new AbortController() };
    reading.current = current;
    setState("loading");
    try {
      const response = await apiFetch(
        "/audio/synthesize",
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text, format: preferredFormat() }),
        },
        { signal: current.abort.signal },
      );
      const sound = await response.blob();
      if (reading.current !== current) return;
      current.url = URL.createObjectURL(sound);
      const audio = new Audio();
      current.audio = audio;
      audio.addEventListener("playing", () => {
        if (reading.current === current && mounted.current) setState("playing");
      });
      audio.addEventListener("ended", () => {
        if (reading.current === current) finish();
      });
      audio.addEventListener("error", () => {
        if (reading.current === current) finish(t("audio.error.playback"));
      });
      audio.src = current.url;
      await audio.play();
    } catch (error) {
      if (reading.current !== current) return;
      const refusedByBrowser = error instanceof DOMException && current.audio !== undefined;
      finish(refusedByBrowser ? t("audio.error.playback") : speechProblem(error));
    }
  };

  const onClick = () => {
    if (state === "idle") void start();
    else finish();
  };

  const label =
    state === "playing"
      ? t("audio.stopReading")
      : state === "loading"
        ? t("audio.preparingSpeech")
        : t("audio.readAloud");
  return (
    <>
      <button
        type="button"
        class={`message-action read-aloud ${state}`}
        data-state={state}
        aria-busy={state === "loading"}
        title={state === "loading" ? t("audio.stopReading") : label}
        onClick={onClick}
      >
        {state === "playing" ? <StopIcon /> : state === "loading" ? <SpinnerIcon /> : <SpeakerIcon />}
        <span>{label}</span>
      </button>
      {problem !== undefined && (
        <span class="audio-problem read-aloud-problem" role="alert">
          {problem}
        </span>
      )}
    </>
  );
}
