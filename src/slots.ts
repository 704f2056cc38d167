/**
 * At most `size` holders at a time; the others wait their turn, first come first served. A waiter
 * whose signal is aborted leaves the line.
 */
export class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(size: number) {
    this.free = Math.max(1, Math.floor(size));
  }

  /** Waits for a slot; the returned function gives it back (once). */
  async take(signal?: AbortSignal): Promise<() => void> {
    if (this.free > 0) {
      this.free -= 1;
    } else {
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          signal?.removeEventListener("abort", leave);
          resolve();
        };
        const leave = () => {
          const at = this.waiting.indexOf(turn);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(signal?.reason ?? new Error("aborted"));
        };
        if (signal?.aborted) return leave();
        signal?.addEventListener("abort", leave, { once: true });
        this.waiting.push(turn);
      });
    }
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    };
  }
}
