import type { BillingService } from "../../billing/billing-service.ts";
import type { PriceList } from "../../billing/prices.ts";
import type { Reservation } from "../../billing/reservation.ts";
import type { ModelConfig } from "../../config/schema.ts";
import type { Catalogue } from "../../engines/catalogue.ts";
import type { Modalities } from "../../engines/modalities.ts";
import type { Machine } from "../../engines/registry.ts";
import type { Placement, Routed, Router } from "../../engines/router.ts";
import type {
  ChatCall,
  ChatChunk,
  ChatCompletion,
  CompletionCall,
  RerankScore,
  TextChunk,
  TextCompletion,
  TokenUsage,
} from "../../engines/types.ts";
import { UpstreamError } from "../../engines/types.ts";
import {
  modelActivationRequired,
  modelNotFound,
  modelUnavailable,
  rerankNotImplemented,
} from "../../errors/catalogue.ts";
import type { RequestTrace } from "../../trace/request-trace.ts";
import type { ModelActivations } from "../model-activations.ts";
import { meteredStream, type StreamEnd } from "./metered-stream.ts";
import type { GenerationContext, Placed, TextGeneration } from "./text-generation.ts";
import {
  chatTokenBounds,
  completionTokenBounds,
  estimateChatInput,
  estimateTokens,
  maxTokensOf,
} from "./token-bounds.ts";

/** Text generation, embeddings and rerank: placement with failover, billed reserve -> settle. */
export class TextService implements TextGeneration {
  private readonly router: Router;
  private readonly catalogue: Catalogue;
  private readonly billing: BillingService;
  private readonly prices: PriceList;
  private readonly installationZones: string[];
  private readonly activations: ModelActivations;

  constructor(deps: {
    router: Router;
    catalogue: Catalogue;
    billing: BillingService;
    prices: PriceList;
    installationZones: string[];
    activations: ModelActivations;
  }) {
    this.router = deps.router;
    this.catalogue = deps.catalogue;
    this.billing = deps.billing;
    this.prices = deps.prices;
    this.installationZones = deps.installationZones;
    this.activations = deps.activations;
  }

  /**
   * Refuses now what `chat` would refuse before reaching a machine (a model that is missing,
   * unavailable or not activated; a 402 for its highest possible cost), without holding or sending
   * anything: for callers that do paid work first (a knowledge-base question).
   */
  async checkChat(call: ChatCall, context: GenerationContext): Promise<void> {
    const model = await this.model(call.model, "chat", context);
    const bounds = chatTokenBounds(call);
    await this.billing.checkFits({
      requestId: context.requestId,
      principal: context.principal,
      endpoint: context.endpoint,
      model: model.id,
      tier: context.tier,
      maxCostMicros: this.prices.tokens(model.id, context.tier, bounds.input, bounds.output),
    });
  }

  async chat(call: ChatCall, context: GenerationContext): Promise<Placed<ChatCompletion>> {
    const model = await this.model(call.model, "chat", context);
    const bounds = chatTokenBounds(call);
    return this.once(context, model, bounds, async (reservation) => {
      const routed = await this.router.run(this.placement(model.id, context), "chat", (machine, engine) =>
        engine.chat(machine.config, call, context.signal),
      );
      await this.settleUsage(reservation, model, context, routed.result.usage, routed);
      return routed;
    });
  }

  async chatStream(call: ChatCall, context: GenerationContext): Promise<Placed<AsyncIterable<ChatChunk>>> {
    const model = await this.model(call.model, "chat", context);
    return this.stream(
      model,
      context,
      chatTokenBounds(call),
      estimateChatInput(call),
      "chat",
      (machine, engine) => engine.chatStream(machine.config, call, context.signal),
    );
  }

  async complete(call: CompletionCall, context: GenerationContext): Promise<Placed<TextCompletion>> {
    const model = await this.model(call.model, "chat", context);
    return this.once(context, model, completionTokenBounds(call), async (reservation) => {
      const routed = await this.router.run(
        this.placement(model.id, context),
        "completion",
        (machine, engine) => engine.complete(machine.config, call, context.signal),
      );
      await this.settleUsage(reservation, model, context, routed.result.usage, routed);
      return routed;
    });
  }

  async completeStream(
    call: CompletionCall,
    context: GenerationContext,
  ): Promise<Placed<AsyncIterable<TextChunk>>> {
    const model = await this.model(call.model, "chat", context);
    return this.stream(
      model,
      context,
      completionTokenBounds(call),
      estimateTokens(call.prompt),
      "completion",
      (machine, engine) => engine.completeStream(machine.config, call, context.signal),
    );
  }

  async embed(
    texts: string[],
    context: GenerationContext,
  ): Promise<Placed<{ vectors: number[][]; promptTokens: number }>> {
    const model = await this.modelOfKind("embedding", context);
    const input = texts.reduce((sum, text) => sum + maxTokensOf(text), 0);
    return this.once(context, model, { input, output: 0 }, async (reservation) => {
      const routed = await this.router.run(
        { model: model.id, zones: null, tier: context.tier, ...traced(context) },
        "embeddings",
        (machine, engine) => engine.embed(machine.config, model.id, texts, context.signal),
      );
      const promptTokens =
        routed.result.promptTokens ?? texts.reduce((sum, text) => sum + estimateTokens(text), 0);
      await this.settleUsage(reservation, model, context, usageOf(promptTokens, 0), routed);
      return { ...routed, result: { vectors: routed.result.vectors, promptTokens } };
    });
  }

  async rerank(
    query: string,
    documents: string[],
    context: GenerationContext,
  ): Promise<Placed<RerankScore[]>> {
    const model = await this.modelOfKind("rerank", context);
    // A cross-encoder reads the query once with every document.
    const input = documents.reduce((sum, document) => sum + maxTokensOf(query) + maxTokensOf(document), 0);
    return this.once(context, model, { input, output: 0 }, async (reservation) => {
      const routed = await this.router.run(
        { model: model.id, zones: null, tier: context.tier, ...traced(context) },
        "rerank",
        (machine, engine) => engine.rerank(machine.config, model.id, query, documents, context.signal),
      );
      const tokens = documents.reduce((sum, d) => sum + estimateTokens(query) + estimateTokens(d), 0);
      await this.settleUsage(reservation, model, context, usageOf(tokens, 0), routed);
      return routed;
    });
  }

  /**
   * Reserve the bound, run, and give everything back if it fails. `run` settles before it returns:
   * the answer goes out once its usage is written, so a crash cannot lose a delivered answer's record.
   */
  private async once<T>(
    context: GenerationContext,
    model: ModelConfig,
    bounds: { input: number; output: number },
    run: (reservation: Reservation) => Promise<{ zone: string; machine: string; result: T }>,
  ): Promise<Placed<T>> {
    const reservation = await this.reserve(context, model, bounds);
    try {
      const { zone, machine, result } = await run(reservation);
      return { zone, machine, result };
    } catch (error) {
      await reservation.release({ outcome: "failed" });
      throw error;
    }
  }

  private async stream<K extends "chat" | "completion", T extends ChatChunk | TextChunk>(
    model: ModelConfig,
    context: GenerationContext,
    bounds: { input: number; output: number },
    inputEstimate: number,
    modality: K,
    open: (machine: Machine, engine: Modalities[K]) => Promise<AsyncIterable<T>>,
  ): Promise<Placed<AsyncIterable<T>>> {
    const reservation = await this.reserve(context, model, bounds);
    let routed: Routed<{ first: T; rest: AsyncIterator<T> }>;
    try {
      // The first chunk is read here, so a machine that fails before it still leaves room to fail over.
      routed = await this.router.run(
        this.placement(model.id, context),
        modality,
        async (machine, engine) => {
          const rest = (await open(machine, engine))[Symbol.asyncIterator]();
          const first = await rest.next();
          if (first.done)
            throw new UpstreamError("protocol", "the upstream stream ended before its first chunk");
          return { first: first.value, rest };
        },
        true,
      );
    } catch (error) {
      await reservation.release({ outcome: "failed" });
      throw error;
    }
    const where = { zone: routed.zone, machine: routed.machine };
    const onEnd = (end: StreamEnd) => {
      routed.finish();
      if (end.outcome === "failed") {
        void reservation.release({ outcome: "failed", ...where });
        return undefined;
      }
      const usage = end.usage ?? usageOf(inputEstimate, Math.ceil(end.generatedCharacters / 4));
      return this.settleUsage(reservation, model, context, usage, where, end.outcome);
    };
    return {
      ...where,
      result: meteredStream(routed.result.first, routed.result.rest, context.signal, onEnd, context.trace),
    };
  }

  private reserve(context: GenerationContext, model: ModelConfig, bounds: { input: number; output: number }) {
    return this.billing.reserve({
      requestId: context.requestId,
      principal: context.principal,
      endpoint: context.endpoint,
      model: model.id,
      tier: context.tier,
      maxCostMicros: this.prices.tokens(model.id, context.tier, bounds.input, bounds.output),
    });
  }

  private settleUsage(
    reservation: Reservation,
    model: ModelConfig,
    context: GenerationContext,
    usage: TokenUsage,
    where: { zone: string; machine: string },
    outcome: "ok" | "partial" = "ok",
  ): Promise<void> {
    if (context.trace) {
      context.trace.promptTokens = usage.prompt_tokens;
      context.trace.completionTokens = usage.completion_tokens;
    }
    return reservation.settle({
      costMicros: this.prices.tokens(model.id, context.tier, usage.prompt_tokens, usage.completion_tokens),
      units: { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens },
      outcome,
      zone: where.zone,
      machine: where.machine,
    });
  }

  private placement(model: string, context: GenerationContext): Placement {
    const zones = context.principal.zones ?? this.installationZones;
    return {
      model,
      zones: this.installationZones.length === 0 ? null : zones,
      tier: context.tier,
      ...(context.preferFamily !== undefined ? { preferFamily: context.preferFamily } : {}),
      ...traced(context),
    };
  }

  /** The catalogue model, ready to take requests: found, of the kind, and activated if served on request. */
  private async model(
    id: string,
    kind: ModelConfig["kind"],
    context: GenerationContext,
  ): Promise<ModelConfig> {
    if (context.trace) context.trace.model = id;
    const model = this.catalogue.find(id);
    if (!model || model.kind !== kind) throw modelNotFound(id);
    if (!(await this.activations.ready(model))) throw modelActivationRequired(id);
    return model;
  }

  private async modelOfKind(kind: "embedding" | "rerank", context: GenerationContext): Promise<ModelConfig> {
    const model = this.catalogue.firstOfKind(kind);
    if (context.trace && model) context.trace.model = model.id;
    if (!model) throw kind === "rerank" ? rerankNotImplemented() : modelUnavailable("bge-m3");
    if (!(await this.activations.ready(model))) throw modelActivationRequired(model.id);
    return model;
  }
}

/** The request's trace for a placement; background work without one still logs its request id. */
function traced(context: GenerationContext): { trace: RequestTrace } {
  return { trace: context.trace ?? { requestId: context.requestId, startedAt: performance.now() } };
}

function usageOf(prompt: number, completion: number): TokenUsage {
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}
