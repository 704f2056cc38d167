// The number formats and Markdown rows shared by the report's tables and the targets' texts.
import type { LoadResult } from "./load.ts";

/** One row of a Markdown table. */
export function row(cells: string[]): string {
  return `| ${cells.join(" | ")} |`;
}

/** A figure with `digits` decimals; "n/a" for one that was not measured (NaN). */
export function fmt(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "n/a";
}

/** A difference, with its sign either way. */
export function signed(value: number): string {
  return Number.isFinite(value) ? `${value >= 0 ? "+" : ""}${value.toFixed(2)}` : "n/a";
}

/** A whole number with thousands separators (requests/s). */
export function int(value: number): string {
  return Math.round(value).toLocaleString("en-US");
}

/** A ratio as a whole percentage. */
export function percent(ratio: number): string {
  return Number.isFinite(ratio) ? `${Math.round(ratio * 100)} %` : "n/a";
}

/** A run's errors; autocannon counts a timeout as an error too. */
export function errorsOf(run: LoadResult): string {
  return run.timeouts > 0 ? `${run.errors} (${run.timeouts} timeouts)` : String(run.errors);
}
