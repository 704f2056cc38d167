import type { ModelConfig } from "../config/schema.ts";
import type { Catalogue } from "../engines/catalogue.ts";
import { invalidRequest, itemNotFound } from "../errors/catalogue.ts";
import type { ModelActivationsRepository } from "../store/repositories/model-activations.ts";

// Other instances see an activation within this time; this instance at once.
const CACHE_MS = 5_000;

/**
 * Models served on request (`on_request: true`) answer 503 `model_activation_required` until the
 * operator activates them, which tells every instance that the model is loaded on its machines.
 */
export class ModelActivations {
  private readonly repo: ModelActivationsRepository;
  private readonly catalogue: Catalogue;
  private readonly now: () => Date;
  private cached: { active: Set<string>; until: number } | undefined;

  constructor(deps: { repo: ModelActivationsRepository; catalogue: Catalogue; now: () => Date }) {
    this.repo = deps.repo;
    this.catalogue = deps.catalogue;
    this.now = deps.now;
  }

  /** Whether requests may go to the model now. */
  async ready(model: ModelConfig): Promise<boolean> {
    if (!model.on_request) return true;
    return (await this.active()).has(model.id);
  }

  async active(): Promise<Set<string>> {
    const now = this.now().getTime();
    if (!this.cached || this.cached.until <= now) {
      this.cached = { active: await this.repo.active(), until: now + CACHE_MS };
    }
    return this.cached.active;
  }

  async setActive(modelId: string, active: boolean): Promise<void> {
    const model = this.catalogue.find(modelId);
    if (!model) throw itemNotFound(`Model ${modelId} is not in the catalogue.`);
    if (!model.on_request) {
      throw invalidRequest(`Model ${modelId} is not served on request; it is always active.`, {
        param: "model",
        code: "not_on_request",
      });
    }
    if (active) await this.repo.activate(modelId);
    else await this.repo.deactivate(modelId);
    this.cached = undefined;
  }
}
