import { useEffect, useState } from "preact/hooks";
import type { WebModels } from "../../../contract/app-api.ts";
import { api } from "../api/api-client.ts";

let loading: Promise<WebModels> | undefined;

/** The chat models and tiers a user may pick (`GET /api/v1/web/models`), read once per page. */
export function useWebModels(): { models: WebModels | undefined; failure: unknown } {
  const [state, setState] = useState<{ models: WebModels | undefined; failure: unknown }>({
    models: undefined,
    failure: undefined,
  });
  useEffect(() => {
    let live = true;
    loading ??= api<WebModels>("GET", "/web/models");
    loading.then(
      (models) => live && setState({ models, failure: undefined }),
      (failure: unknown) => {
        loading = undefined;
        if (live) setState({ models: undefined, failure });
      },
    );
    return () => {
      live = false;
    };
  }, []);
  return state;
}

const MODEL_KEY = "zona.model";
const TIER_KEY = "zona.tier";

/** The model to preselect: the last one picked when it is still there and available, else the default. */
export function preferredModel(models: WebModels): string | undefined {
  const usable = models.data.filter((model) => model.available);
  const stored = localStorage.getItem(MODEL_KEY);
  if (stored && usable.some((model) => model.id === stored)) return stored;
  if (usable.some((model) => model.id === models.default_model)) return models.default_model;
  return usable[0]?.id ?? models.data[0]?.id;
}

/** The tier to preselect. */
export function preferredTier(models: WebModels): string {
  const stored = localStorage.getItem(TIER_KEY);
  return stored && models.tiers.includes(stored) ? stored : models.default_tier;
}

/** Remembers the picks for the next conversation. */
export function rememberPicks(model: string, tier: string): void {
  localStorage.setItem(MODEL_KEY, model);
  localStorage.setItem(TIER_KEY, tier);
}
