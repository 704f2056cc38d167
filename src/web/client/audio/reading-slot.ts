/** Something reading aloud (or getting ready to), which can be told to stop. */
export interface Reader {
  cancel(): void;
}

let active: Reader | undefined;

/** Makes `reader` the one reading on the page: the one before it stops, so two answers never play together. */
export function claimReading(reader: Reader): void {
  const before = active;
  active = reader;
  if (before !== undefined && before !== reader) before.cancel();
}

/** `reader` has stopped. */
export function releaseReading(reader: Reader): void {
  if (active === reader) active = undefined;
}
