import { TIER_NAMES, type TierName } from "../config/schema.ts";
import { unknownServiceTier } from "../errors/catalogue.ts";

/** The tier a request asks for with `X-Service-Tier` (any case); absent or empty means the default tier. */
export function serviceTierOf(header: string | string[] | undefined, defaultTier: TierName): TierName {
  // A repeated header arrives as a list (or joined by Node): that names no single tier.
  const value = Array.isArray(header) ? header.join(", ") : (header ?? "");
  const name = value.trim().toLowerCase();
  if (name === "") return defaultTier;
  const tier = TIER_NAMES.find((candidate) => candidate === name);
  if (!tier) throw unknownServiceTier(value, TIER_NAMES);
  return tier;
}
