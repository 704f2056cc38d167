// The month of the last moment asked about, and where it starts and ends: every request asks,
// and toISOString costs more than the rest of the billing of a request that reserves nothing.
let known = { month: "", from: 0, until: -1 };

/** The calendar month (UTC) a moment belongs to, as `YYYY-MM`: the period of monthly limits. */
export function monthOf(date: Date): string {
  const time = date.getTime();
  if (time >= known.from && time < known.until) return known.month;
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  known = {
    month: `${String(year).padStart(4, "0")}-${String(month + 1).padStart(2, "0")}`,
    // setUTCFullYear, not Date.UTC: that one reads years 0-99 as 1900-1999.
    from: new Date(0).setUTCFullYear(year, month, 1),
    until: new Date(0).setUTCFullYear(year, month + 1, 1),
  };
  return known.month;
}

/** Whether a string names a month as `YYYY-MM`. */
export function isMonth(value: string): boolean {
  return /^\d{4}-(0[1-9]|1[0-2])$/.test(value);
}
