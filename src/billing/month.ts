/** The calendar month (UTC) a moment belongs to, as `YYYY-MM`: the period of monthly limits. */
export function monthOf(date: Date): string {
  return date.toISOString().slice(0, 7);
}

/** Whether a string names a month as `YYYY-MM`. */
export function isMonth(value: string): boolean {
  return /^\d{4}-(0[1-9]|1[0-2])$/.test(value);
}
