import { useEffect, useRef, useState } from "preact/hooks";
import { apiFetch } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import { t } from "../i18n/i18n.ts";
import { errorText } from "../ui/error-text.ts";
import "./audio.css";
import { CloseIcon, MicrophoneIcon, SpinnerIcon, StopIcon } from "./icons.tsx";
import { RecorderError, Recording, recordingFileName } from "./recorder.ts";

/** The longest recording: it stops by itself then and is transcribed. */
export const MAX_RECORDING_SECONDS = 300;

type Phase = "idle" | "starting" | "recording" | "transcribing";

function clock(seconds: number): string {
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

/** What to tell the user about a failed transcription. */
function transcribeProblem(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === "network" || error.status === 429) return errorText(error);
    if (error.status >= 500) return t("audio.error.transcribeUnavailable");
    if (error.status === 400 || error.status === 413 || error.status === 422) {
      return t("audio.error.transcribeRefused");
    }
  }
  return errorText(error);
}

/**
 * Records from the microphone and hands the transcribed text over (`POST /audio/transcribe`, the
 * file in `audio`); the text goes into the message box to be edited, never sent by itself. Click
 * once to record, again to stop; a recording stops by itself after five minutes.
 */
export function DictateButton(props: { onText: (text: string) => void; disabled?: boolean }) {
  const [phase, setPhase] = useState<Phase>("idle");
  const [seconds, setSeconds] = useState(0);
  const [problem, setProblem] = useState<string>();
  const phaseNow = useRef<Phase>("idle");
  const recording = useRef<Recording | undefined>(undefined);
  const ticker = useRef<ReturnType<typeof setInterval> | undefined>(undefined);
  const upload = useRef<AbortController | undefined>(undefined);
  const mounted = useRef(true);
  const onText = useRef(props.onText);
  onText.current = props.onText;

  const enter = (next: Phase) => {
    phaseNow.current = next;
    if (mounted.current) setPhase(next);
  };
  const stopTicker = () => {
    if (ticker.current !== undefined) clearInterval(ticker.current);
    ticker.current = undefined;
  };

  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
      stopTicker();
      recording.current?.discard();
      recording.current = undefined;
      upload.current?.abort();
    };
  }, []);

  const transcribe = async () => {
    const current = recording.current;
    if (phaseNow.current !== "recording" || current === undefined) return;
    stopTicker();
    enter("transcribing");
    recording.current = undefined;
    try {
      const audio = await current.stop();
      if (!mounted.current) return;
      if (audio.size === 0) {
        setProblem(t("audio.error.nothingRecorded"));
        return;
      }
      const form = new FormData();
      form.append("audio", audio, recordingFileName(current.mimeType));
      const abort = new AbortController();
      upload.current = abort;
      const response = await apiFetch(
        "/audio/transcribe",
        { method: "POST", body: form },
        { signal: abort.signal },
      );
      const answer = (await response.json()) as { text?: unknown };
      if (!mounted.current) return;
      const text = typeof answer.text === "string" ? answer.text.trim() : "";
      if (text === "") setProblem(t("audio.error.nothingHeard"));
      else onText.current(text);
    } catch (error) {
      if (mounted.current && !upload.current?.signal.aborted) setProblem(transcribeProblem(error));
    } finally {
      upload.current = undefined;
      enter("idle");
    }
  };

  const record = async () => {
    setProblem(undefined);
    enter("starting");
    try {
      const started = await Recording.start();
      if (!mounted.current) {
        started.discard();
        return;
      }
      recording.current = started;
      setSeconds(0);
      enter("recording");
      ticker.current = setInterval(() => {
        const elapsed = Math.floor((Date.now() - started.startedAt) / 1000);
        setSeconds(elapsed);
        if (elapsed >= MAX_RECORDING_SECONDS) void transcribe();
      }, 250);
    } catch (error) {
      enter("idle");
      if (mounted.current) {
        setProblem(error instanceof RecorderError ? t(error.text) : t("audio.error.microphoneBusy"));
      }
    }
  };

  const onClick = () => {
    if (phaseNow.current === "idle") void record();
    else if (phaseNow.current === "recording") void transcribe();
  };

  const recordingNow = phase === "recording";
  const busy = phase === "starting" || phase === "transcribing";
  const title = recordingNow
    ? t("audio.stopDictation")
    : phase === "starting"
      ? t("audio.startingMicrophone")
      : phase === "transcribing"
        ? t("audio.transcribing")
        : t("audio.dictate");
  return (
    <div class="dictate">
      <button
        type="button"
        class={recordingNow ? "icon-button dictate-button recording" : "icon-button dictate-button"}
        data-state={phase}
        disabled={phase === "idle" && props.disabled === true}
        aria-label={t("audio.dictate")}
        aria-pressed={recordingNow}
        aria-busy={busy}
        aria-disabled={busy ? "true" : undefined}
        title={title}
        onClick={onClick}
      >
        {recordingNow ? <StopIcon /> : busy ? <SpinnerIcon /> : <MicrophoneIcon />}
        {recordingNow && <span class="dictate-time">{clock(seconds)}</span>}
      </button>
      {busy && (
        <span class="offscreen" role="status">
          {title}
        </span>
      )}
      {problem !== undefined && (
        <div class="audio-problem dictate-problem" role="alert">
          <span>{problem}</span>
          <button
            type="button"
            class="audio-problem-close"
            aria-label={t("common.close")}
            title={t("common.close")}
            onClick={() => setProblem(undefined)}
          >
            <CloseIcon />
          </button>
        </div>
      )}
    </div>
  );
}
