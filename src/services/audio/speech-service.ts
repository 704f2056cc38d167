import type { BillingService } from "../../billing/billing-service.ts";
import type { PriceList } from "../../billing/prices.ts";
import { isBuiltinSpeech } from "../../config/builtin-speech.ts";
import type { EngineRegistry, Machine } from "../../engines/registry.ts";
import type { Attempt, Routed, Router } from "../../engines/router.ts";
import { type SpeechCall, UpstreamError, type VoiceName } from "../../engines/types.ts";
import { badGateway, isServiceFailure } from "../../errors/catalogue.ts";
import { AI_SPEECH_COMMENT, type AiMark } from "../../media/ai-mark.ts";
import { encodeMp3, Mp3EncoderUnavailable } from "../../media/mp3.ts";
import { markWavAsAi, wavPcm16 } from "../../media/wav.ts";
import type { GenerationContext } from "../text/text-generation.ts";
import type { ContentCheck } from "./content-check.ts";
import { resolveVoice } from "./voices.ts";

/** A text to read, its fields validated by the route. */
export interface SpeechRequest {
  input: string;
  /** As the client sent it: an own voice, a third-party name, or absent. */
  voice: string | undefined;
  /** Two letters. */
  language: string;
  format: "wav" | "mp3";
}

/** The audio made. */
export interface SpeechOutcome {
  audio: Buffer;
  contentType: "audio/wav" | "audio/mpeg";
  voice: VoiceName;
  durationSeconds: number;
}

/** The catalogue model that speech runs on. */
export const SPEECH_MODEL = "tts-1";
const AI_MARK: AiMark = { software: "Zona", comment: AI_SPEECH_COMMENT };

/**
 * Speech for both APIs (docs/audio-api.md#speech-post-v1audiospeech): the voice from the voice tables,
 * the content check of the zone where it runs (before anything is read), then the whole file from
 * a speech machine of the fallback zone (or, without one there, of the first zone that has one),
 * the built-in engine last, marked as made by AI (a LIST/INFO chunk in WAV, ID3 tags in MP3). Billed per character; an
 * engine that fails, or a missing MP3 encoder, is 502 and costs nothing.
 */
export class SpeechService {
  private readonly router: Router;
  private readonly registry: EngineRegistry;
  private readonly billing: BillingService;
  private readonly prices: PriceList;
  private readonly contentCheck: ContentCheck;
  private readonly fallbackZone: string | undefined;
  private readonly mp3: typeof encodeMp3;

  constructor(deps: {
    router: Router;
    registry: EngineRegistry;
    billing: BillingService;
    prices: PriceList;
    contentCheck: ContentCheck;
    fallbackZone: string | undefined;
    /** The MP3 encoder (a test replaces it with one that cannot load). */
    encodeMp3?: typeof encodeMp3;
  }) {
    this.router = deps.router;
    this.registry = deps.registry;
    this.billing = deps.billing;
    this.prices = deps.prices;
    this.contentCheck = deps.contentCheck;
    this.fallbackZone = deps.fallbackZone;
    this.mp3 = deps.encodeMp3 ?? encodeMp3;
  }

  async speak(
    request: SpeechRequest,
    context: GenerationContext,
    inputParam = "input",
  ): Promise<SpeechOutcome> {
    const voice = resolveVoice(request.voice, request.language);
    const zone = this.speechZone(context);
    if (zone === undefined) throw badGateway("No speech engine is configured on this installation.");
    const characters = [...request.input].length;
    const cost = this.prices.speech(characters);
    // The money first (402 says nothing was sent anywhere), then the check, then the reading.
    const reservation = await this.billing.reserve({
      requestId: context.requestId,
      principal: context.principal,
      endpoint: context.endpoint,
      model: SPEECH_MODEL,
      tier: context.tier,
      maxCostMicros: cost,
    });
    try {
      await this.contentCheck.check(request.input, zone, context.signal, inputParam, context.trace);
    } catch (error) {
      await reservation.release({ outcome: "refused" });
      throw error;
    }
    const call: SpeechCall = { text: request.input, voice, language: request.language };
    let outcome: SpeechOutcome;
    let where: { zone: string; machine: string };
    try {
      const routed = await this.read(zone, call, context);
      where = { zone: routed.zone, machine: routed.machine };
      outcome = await this.encode(routed.result, request.format, voice);
    } catch (error) {
      await reservation.release({ outcome: "failed" });
      if (context.signal.aborted) throw error;
      if (error instanceof Mp3EncoderUnavailable) throw badGateway("The MP3 encoder is not available.");
      // No machine could be tried (all down) or none answered: the speech engine failed.
      if (error instanceof UpstreamError || isServiceFailure(error)) {
        throw badGateway("The speech engine did not answer. Try again with growing pauses.");
      }
      throw error;
    }
    await reservation.settle({ costMicros: cost, units: { characters }, ...where });
    return outcome;
  }

  /**
   * The fallback zone when a declared speech machine is there, else the zone of the first declared
   * one; the built-in engine's zone (the same one, see builtin-speech.ts) when none is declared.
   */
  private speechZone(context: GenerationContext): string | undefined {
    const machines: Machine[] = this.registry.candidates(SPEECH_MODEL, null, context.tier, "speech");
    const declared = machines.filter((machine) => !isBuiltinSpeech(machine.config));
    if (
      this.fallbackZone !== undefined &&
      declared.some((machine) => machine.config.zone === this.fallbackZone)
    ) {
      return this.fallbackZone;
    }
    return (declared[0] ?? machines[0])?.config.zone;
  }

  /**
   * Reads the text on the speech machines of the zone: the declared ones first, the built-in engine
   * only when none of them could (all down, circuits open, or failing). The text has passed the
   * zone's content check, whichever engine reads it.
   */
  private async read(zone: string, call: SpeechCall, context: GenerationContext): Promise<Routed<Buffer>> {
    const inZone = this.registry.candidates(SPEECH_MODEL, new Set([zone]), context.tier, "speech");
    const declared = inZone.filter((machine) => !isBuiltinSpeech(machine.config));
    const builtin = inZone.filter((machine) => isBuiltinSpeech(machine.config));
    const trace = context.trace;
    if (trace) {
      trace.model ??= SPEECH_MODEL;
      trace.tier ??= context.tier;
    }
    const attempt: Attempt<"speech", Buffer> = async (machine, engine) => {
      const started = performance.now();
      try {
        return await engine.speak(machine.config, call, context.signal);
      } finally {
        // The trace names the last machine tried, as the router's placements do.
        if (trace) {
          trace.machine = machine.config.name;
          trace.zone = machine.config.zone;
          trace.upstreamMs = Math.round((performance.now() - started) * 100) / 100;
        }
      }
    };
    const about = { model: SPEECH_MODEL, ...(trace ? { trace } : {}) };
    const failed = () => badGateway("The speech engine did not answer. Try again with growing pauses.");
    if (declared.length > 0) {
      try {
        return await this.router.runAmong(declared, "speech", attempt, failed, about);
      } catch (error) {
        const engineFailed =
          (error instanceof UpstreamError && error.kind !== "aborted") || isServiceFailure(error);
        if (builtin.length === 0 || context.signal.aborted || !engineFailed) throw error;
      }
    }
    return this.router.runAmong(builtin, "speech", attempt, failed, about);
  }

  private async encode(wav: Buffer, format: "wav" | "mp3", voice: VoiceName): Promise<SpeechOutcome> {
    let pcm: ReturnType<typeof wavPcm16>;
    try {
      pcm = wavPcm16(wav);
    } catch {
      throw new UpstreamError("protocol", "the speech engine did not answer a 16-bit PCM WAV file");
    }
    const durationSeconds = pcm.pcm.length / 2 / pcm.channels / pcm.sampleRate;
    if (format === "mp3") {
      const audio = await this.mp3(pcm.pcm, pcm.sampleRate, pcm.channels, AI_MARK);
      return { audio, contentType: "audio/mpeg", voice, durationSeconds };
    }
    return { audio: markWavAsAi(wav, AI_MARK), contentType: "audio/wav", voice, durationSeconds };
  }
}
