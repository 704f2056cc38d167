/** Money is kept as whole micro-units (1e-6 CHF or credit) so that sums never drift. */
export const MICROS_PER_UNIT = 1_000_000;

/** Largest amount accepted from an operator or a client, in units. */
export const MAX_AMOUNT = 1_000_000_000;

export function toMicros(amount: number): number {
  return Math.round(amount * MICROS_PER_UNIT);
}

export function fromMicros(micros: number): number {
  return micros / MICROS_PER_UNIT;
}
