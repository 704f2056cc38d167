const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a string can be a row id; others are refused before they reach the database (which would fail on them). */
export function isRowId(value: string): boolean {
  return UUID.test(value);
}
