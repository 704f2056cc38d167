import { randomInt } from "node:crypto";
import type { BillingService } from "../../billing/billing-service.ts";
import type { PriceList } from "../../billing/prices.ts";
import type { ModelConfig } from "../../config/schema.ts";
import type { Catalogue } from "../../engines/catalogue.ts";
import type { EngineRegistry } from "../../engines/registry.ts";
import type { Attempt, Router } from "../../engines/router.ts";
import { type ImageCall, UpstreamError } from "../../engines/types.ts";
import { ApiError, isRefusal, isUnavailable } from "../../errors/catalogue.ts";
import {
  engineError,
  imageModelNotFound,
  noEngineAvailable,
  outputRefused,
} from "../../errors/media-errors.ts";
import { markPngAsAi } from "../../media/png-ai-mark.ts";
import { toPng } from "../../media/to-png.ts";
import type { ContentCheck } from "../audio/content-check.ts";
import type { GenerationContext } from "../text/text-generation.ts";
import type { ImageFiles } from "./image-files.ts";
import type { ImageRequest } from "./image-request.ts";
import { placeOn } from "./machine-gate.ts";

/** One picture as the client gets it: base64 PNG, or a signed link (path and query) to the kept PNG. */
export type DeliveredImage = { b64_json: string } | { link: string };

/** What a request made. */
export interface ImageOutcome {
  /** Unix seconds. */
  created: number;
  /** The zone that made the (first) picture delivered, for `X-Zona`. */
  zone: string;
  data: DeliveredImage[];
}

/** A picture made and checked, marked, with where it was made. */
interface MadePicture {
  png: Buffer;
  zone: string;
  machine: string;
}

/** The image model the API names (docs/images-api.md). */
const NAMED_IMAGE_MODEL = "z-image-turbo";

// Seeds run from 0 to 2^31 - 1; picture i of a request uses seed + i, wrapping around.
const SEEDS = 2 ** 31;

/**
 * Image generation (`POST /v1/images/generations`): the model of the catalogue, the
 * prompt checked in every zone that may make it (before any money is held: a refused prompt leaves
 * no trace), the highest cost (n pictures) reserved, then the pictures made one after the other on
 * the machines of the key's zones (failover between them), each converted to PNG and checked by the
 * content check of the zone that made it; refused ones are dropped, the others marked as made by AI
 * and returned, and only those delivered are charged.
 */
export class ImageService {
  private readonly router: Router;
  private readonly registry: EngineRegistry;
  private readonly catalogue: Catalogue;
  private readonly billing: BillingService;
  private readonly prices: PriceList;
  private readonly contentCheck: ContentCheck;
  private readonly files: ImageFiles;
  private readonly installationZones: string[];
  private readonly timeoutMs: number;
  private readonly now: () => Date;

  constructor(deps: {
    router: Router;
    registry: EngineRegistry;
    catalogue: Catalogue;
    billing: BillingService;
    prices: PriceList;
    contentCheck: ContentCheck;
    files: ImageFiles;
    installationZones: string[];
    /** How long one picture may take on one machine before the next is tried. */
    timeoutMs: number;
    now: () => Date;
  }) {
    this.router = deps.router;
    this.registry = deps.registry;
    this.catalogue = deps.catalogue;
    this.billing = deps.billing;
    this.prices = deps.prices;
    this.contentCheck = deps.contentCheck;
    this.files = deps.files;
    this.installationZones = deps.installationZones;
    this.timeoutMs = deps.timeoutMs;
    this.now = deps.now;
  }

  async generate(request: ImageRequest, context: GenerationContext): Promise<ImageOutcome> {
    const model = this.model(request.model);
    const trace = context.trace;
    if (trace) {
      trace.model = model.id;
      trace.tier ??= context.tier;
    }
    const zones =
      this.installationZones.length === 0 ? null : (context.principal.zones ?? this.installationZones);
    const machines = this.registry.candidates(
      model.id,
      zones === null ? null : new Set(zones),
      context.tier,
      "images",
    );
    if (machines.length === 0) throw noEngineAvailable(model.id);
    // Whichever machine makes the pictures, the prompt has passed the check of its zone.
    for (const zone of new Set(machines.map((machine) => machine.config.zone))) {
      await this.contentCheck.checkPrompt(request.prompt, zone, context.signal, trace);
    }
    const reservation = await this.billing.reserve({
      requestId: context.requestId,
      principal: context.principal,
      endpoint: context.endpoint,
      model: model.id,
      tier: context.tier,
      maxCostMicros: this.prices.images(request.n),
      holdSeconds: Math.ceil((request.n * machines.length * this.timeoutMs) / 1000) + 120,
    });
    let made: MadePicture[];
    let data: DeliveredImage[];
    try {
      made = await this.make(model, request, zones, context);
      if (made.length === 0) throw outputRefused();
      data = await this.deliver(made, request.responseFormat);
    } catch (error) {
      const refused = isRefusal(error);
      await reservation.release({ outcome: refused ? "refused" : "failed", units: { pictures: 0 } });
      throw error;
    }
    const first = made[0] as MadePicture;
    await reservation.settle({
      costMicros: this.prices.images(made.length),
      units: { pictures: made.length },
      zone: first.zone,
      machine: first.machine,
    });
    return { created: Math.floor(this.now().getTime() / 1000), zone: first.zone, data };
  }

  /** The catalogue's image model of that name, or its first image model. */
  private model(id: string | undefined): ModelConfig {
    if (id === undefined) {
      const model = this.catalogue.firstOfKind("image");
      if (!model) throw noEngineAvailable("an image model");
      return model;
    }
    const model = this.catalogue.find(id);
    // The image model the API names exists only where machines make it: elsewhere it is 503, not unknown.
    if (model === undefined && id === NAMED_IMAGE_MODEL) throw noEngineAvailable(id);
    if (model?.kind !== "image") throw imageModelNotFound(id);
    return model;
  }

  /** Makes the pictures one after the other; those the content check refuses are left out. */
  private async make(
    model: ModelConfig,
    request: ImageRequest,
    zones: string[] | null,
    context: GenerationContext,
  ): Promise<MadePicture[]> {
    const firstSeed = request.seed ?? randomInt(0, SEEDS);
    const made: MadePicture[] = [];
    for (let index = 0; index < request.n; index += 1) {
      const call: ImageCall = {
        model: model.id,
        prompt: request.prompt,
        size: request.size,
        seed: (firstSeed + index) % SEEDS,
      };
      const picture = await this.makeOne(call, zones, context);
      const allowed = await this.contentCheck.pictureAllowed(
        picture.png,
        picture.zone,
        context.signal,
        context.trace,
      );
      if (allowed) made.push({ ...picture, png: markPngAsAi(picture.png) });
    }
    return made;
  }

  private async makeOne(
    call: ImageCall,
    zones: string[] | null,
    context: GenerationContext,
  ): Promise<MadePicture> {
    const attempt: Attempt<"images", Buffer> = async (machine, engine) => {
      // The picture's time starts once the machine has a place for it.
      const release = await placeOn(machine, context.signal).catch(() => {
        throw new UpstreamError("aborted", "the client went away while the picture was waiting");
      });
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new PictureDeadline()), this.timeoutMs);
      try {
        const image = await engine.generateImage(
          machine.config,
          call,
          AbortSignal.any([context.signal, deadline.signal]),
        );
        try {
          return await toPng(image.data);
        } catch {
          throw new UpstreamError(
            "protocol",
            "the engine answered something that is not a PNG, JPEG or WebP",
          );
        }
      } finally {
        clearTimeout(timer);
        release();
      }
    };
    try {
      const routed = await this.router.run(
        {
          model: call.model,
          zones,
          tier: context.tier,
          ...(context.trace ? { trace: context.trace } : {}),
        },
        "images",
        attempt,
      );
      return { png: routed.result, zone: routed.zone, machine: routed.machine };
    } catch (error) {
      if (context.signal.aborted || !(error instanceof ApiError)) throw error;
      // The router's 503s: every machine is down (circuit open, connection refused).
      if (isUnavailable(error)) throw noEngineAvailable(call.model);
      throw engineError();
    }
  }

  private async deliver(
    made: MadePicture[],
    format: ImageRequest["responseFormat"],
  ): Promise<DeliveredImage[]> {
    if (format === "b64_json") return made.map((picture) => ({ b64_json: picture.png.toString("base64") }));
    const delivered: DeliveredImage[] = [];
    for (const picture of made) delivered.push({ link: await this.files.keep(picture.png) });
    return delivered;
  }
}

// Named as a timeout, so that the machine that did not answer in time is marked like one that timed out.
class PictureDeadline extends Error {
  override name = "TimeoutError";
}
