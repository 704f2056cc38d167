import { ApiError } from "../api/api-error.ts";
import { t } from "../i18n/i18n.ts";

/** What to tell the user about a failed call, in their language where the code is known. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === "network") return t("common.error.network");
    if (error.status === 429) return t("common.error.rateLimited", { seconds: error.retryAfter ?? 60 });
    if (error.status >= 500) return t("common.error.generic");
    return error.message;
  }
  return t("common.error.generic");
}

/** The first message of a 422 about `field`, if any. */
export function fieldError(error: unknown, field: string): string | undefined {
  return error instanceof ApiError ? error.fields[field]?.[0] : undefined;
}
