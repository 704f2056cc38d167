import type { BillingService } from "../../billing/billing-service.ts";
import type { PriceList } from "../../billing/prices.ts";
import type { Reservation } from "../../billing/reservation.ts";
import type { Attempt, Routed, Router } from "../../engines/router.ts";
import {
  type AudioFile,
  type Transcription,
  type TranscriptionCall,
  UpstreamError,
} from "../../engines/types.ts";
import { ApiError, badGateway } from "../../errors/catalogue.ts";
import { transcriptionTimeout } from "../../errors/media-errors.ts";
import type { GenerationContext } from "../text/text-generation.ts";
import { isHallucination } from "./hallucination-filter.ts";
import { type AudioInspection, inspectAudio } from "./inspect-audio.ts";
import { fallbackReason } from "./transcription-placement.ts";

/** A transcription asked for, its fields validated by the route. */
export interface TranscriptionRequest {
  /** `asr-1` or `asr-1-hd`. */
  model: string;
  /** The uploaded file on disk (never trusted: its format is read from the content). */
  file: { path: string; size: number; filename: string };
  language?: string;
  prompt?: string;
  temperature?: number;
  /** Word timings asked. */
  words: boolean;
  /** Whether a silent 16-bit WAV is answered empty without a model (the key API does that; the app API does not). */
  silenceCheck: boolean;
}

/** A transcription done, and how. */
export interface TranscriptionOutcome {
  transcription: Transcription;
  /** The zone of the zone machine that transcribed (the response's `X-Zona`); null for the fallback server or silence. */
  zone: string | null;
  /** Seconds of audio, as billed. */
  durationSeconds: number;
  /** The language to show: the one detected, else the one sent, else `it`. */
  language: string;
  /** Whether the file was found silent and no model ran. */
  silent: boolean;
}

/**
 * Transcription for both APIs (docs/audio-api.md#placement has the rules): the format is
 * checked on the content, a silent 16-bit WAV is answered empty for free, then the placement rules:
 * a transcription machine of the allowed zones when it can take the job (rule 1), else, or when it
 * fails, refuses or does not answer within the zone bound, the fallback server (rules 2 and 3); 502
 * when that fails too, 504 past the time limit. Billed per second of audio; every call that reached
 * an engine leaves a usage record.
 */
export class TranscriptionService {
  private readonly router: Router;
  private readonly billing: BillingService;
  private readonly prices: PriceList;
  private readonly installationZones: string[];
  private readonly fallbackZone: string | undefined;
  /** Without installation zones: every zone with machines but the fallback one. */
  private readonly machineZones: string[];
  private readonly timeoutMs: number;
  private readonly zoneTimeoutMs: number;

  constructor(deps: {
    router: Router;
    billing: BillingService;
    prices: PriceList;
    installationZones: string[];
    fallbackZone: string | undefined;
    /** The zones machines are in (the fallback zone among them or not). */
    machineZones: string[];
    timeoutMs: number;
    /** How long the machines of the key's zones get before the fallback server takes over (rule 3). */
    zoneTimeoutMs: number;
  }) {
    this.router = deps.router;
    this.billing = deps.billing;
    this.prices = deps.prices;
    this.installationZones = deps.installationZones;
    this.fallbackZone = deps.fallbackZone;
    this.machineZones = deps.machineZones.filter((zone) => zone !== deps.fallbackZone);
    this.timeoutMs = deps.timeoutMs;
    this.zoneTimeoutMs = deps.zoneTimeoutMs;
  }

  async transcribe(request: TranscriptionRequest, context: GenerationContext): Promise<TranscriptionOutcome> {
    const audio = await inspectAudio(request.file.path, { silenceCheck: request.silenceCheck });
    if (audio.silent) {
      return {
        transcription: { text: "", language: null, duration: 0, segments: [] },
        zone: null,
        durationSeconds: 0,
        language: request.language ?? "it",
        silent: true,
      };
    }
    const call: TranscriptionCall = {
      model: request.model,
      file: audioFile(request, audio),
      ...(request.language !== undefined ? { language: request.language } : {}),
      ...(request.prompt !== undefined ? { prompt: request.prompt } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      words: request.words,
    };
    const reservation = await this.billing.reserve({
      requestId: context.requestId,
      principal: context.principal,
      endpoint: context.endpoint,
      model: request.model,
      tier: context.tier,
      maxCostMicros: this.prices.transcription(durationBound(audio, request.file.size)),
      holdSeconds: Math.ceil(this.timeoutMs / 1000) + 60,
    });
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new TranscriptionDeadline()), this.timeoutMs);
    const signal = AbortSignal.any([context.signal, deadline.signal]);
    let placed: { routed: Routed<Transcription>; zoneMachine: boolean };
    try {
      placed = await this.place(call, audio, request, context, signal);
    } catch (error) {
      await reservation.release({ outcome: "failed" });
      if (deadline.signal.aborted) throw transcriptionTimeout();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return this.finish(placed, audio, request, reservation);
  }

  private async place(
    call: TranscriptionCall,
    audio: AudioInspection,
    request: TranscriptionRequest,
    context: GenerationContext,
    signal: AbortSignal,
  ): Promise<{ routed: Routed<Transcription>; zoneMachine: boolean }> {
    const reason = fallbackReason({
      model: request.model,
      words: request.words,
      prompt: request.prompt !== undefined,
      durationSeconds: audio.durationSeconds,
      sizeBytes: request.file.size,
      container: audio.container,
    });
    if (reason === undefined) {
      // The fallback server is never a zone machine, also on an installation without zones.
      const zones =
        this.installationZones.length > 0
          ? (context.principal.zones ?? this.installationZones)
          : this.machineZones;
      // The zone machines get a bound of their own, so that one that takes the upload and never
      // answers leaves the fallback server its time within the whole limit.
      const zoneDeadline = new AbortController();
      const timer = setTimeout(() => zoneDeadline.abort(new ZoneDeadline()), this.zoneTimeoutMs);
      try {
        const routed = await this.router.run(
          { model: request.model, zones, tier: context.tier, ...traceOf(context) },
          "transcription",
          this.attempt(call, AbortSignal.any([signal, zoneDeadline.signal])),
        );
        return { routed, zoneMachine: true };
      } catch (error) {
        // Rule 3: a zone machine that does not answer, errors or refuses hands over to the fallback server.
        if (signal.aborted || !(error instanceof ApiError || error instanceof UpstreamError)) throw error;
      } finally {
        clearTimeout(timer);
      }
    }
    if (this.fallbackZone === undefined) throw badGateway("No transcription server answered the request.");
    try {
      const routed = await this.router.run(
        { model: request.model, zones: [this.fallbackZone], tier: context.tier, ...traceOf(context) },
        "transcription",
        this.attempt(call, signal),
      );
      return { routed, zoneMachine: false };
    } catch (error) {
      if (signal.aborted || !(error instanceof ApiError || error instanceof UpstreamError)) throw error;
      throw badGateway("No transcription server answered the request. Try again with growing pauses.");
    }
  }

  private attempt(call: TranscriptionCall, signal: AbortSignal): Attempt<"transcription", Transcription> {
    return (machine, engine) => {
      // Once the zone machines' time is up the others of the zones are not tried (nor marked down).
      if (signal.aborted) throw new UpstreamError("aborted", "the time for this placement is up");
      return engine.transcribe(machine.config, call, signal);
    };
  }

  private async finish(
    placed: { routed: Routed<Transcription>; zoneMachine: boolean },
    audio: AudioInspection,
    request: TranscriptionRequest,
    reservation: Reservation,
  ): Promise<TranscriptionOutcome> {
    const { routed, zoneMachine } = placed;
    const seconds = audio.durationSeconds ?? routed.result.duration ?? 0;
    await reservation.settle({
      costMicros: this.prices.transcription(seconds),
      units: { seconds: Math.ceil(seconds) },
      zone: routed.zone,
      machine: routed.machine,
    });
    let transcription = routed.result;
    // Rule 7: only what a zone machine answered is judged; the fallback server's answers pass as they come.
    if (zoneMachine && isHallucination(transcription)) {
      transcription = {
        ...transcription,
        text: "",
        segments: [],
        ...(transcription.words ? { words: [] } : {}),
      };
    }
    return {
      transcription,
      zone: zoneMachine ? routed.zone : null,
      durationSeconds: seconds,
      language: transcription.language ?? request.language ?? "it",
      silent: false,
    };
  }
}

function traceOf(context: GenerationContext) {
  return context.trace ? { trace: context.trace } : {};
}

class TranscriptionDeadline extends Error {
  override name = "TranscriptionDeadline";
}

// Named as a timeout, so that the machine that did not answer in time is marked like one that timed out.
class ZoneDeadline extends Error {
  override name = "TimeoutError";
}

function audioFile(request: TranscriptionRequest, audio: AudioInspection): AudioFile {
  const filename = request.file.filename.trim() !== "" ? request.file.filename : `audio.${audio.container}`;
  return { path: request.file.path, size: request.file.size, mime: audio.mime, filename };
}

// The most a file can be billed for before its length is known: its length when the file says,
// else what its size would hold at 8 kbit/s (below the bitrate of any usable speech recording).
function durationBound(audio: AudioInspection, sizeBytes: number): number {
  return audio.durationSeconds ?? sizeBytes / 1000;
}
