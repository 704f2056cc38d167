import type { Machine } from "../../engines/registry.ts";

/** The places of one machine: pictures running on it, and those waiting for a place. */
interface Gate {
  running: number;
  waiting: Array<() => void>;
}

// Keyed by the machine's live state, which a configuration reload carries over: a reload neither
// forgets the pictures running nor lets new ones past them.
const gates = new WeakMap<Machine, Gate>();

/**
 * Waits for a free place on a machine (at most its `capacity` pictures at once, so pictures queue
 * rather than overload a GPU) and resolves with the function that gives the place back. A client
 * that leaves while waiting leaves the queue (the promise rejects with the signal's reason).
 */
export function placeOn(machine: Machine, signal: AbortSignal): Promise<() => void> {
  let gate = gates.get(machine);
  if (!gate) {
    gate = { running: 0, waiting: [] };
    gates.set(machine, gate);
  }
  const own = gate;
  const release = once(() => {
    own.running -= 1;
    own.waiting.shift()?.();
  });
  if (own.running < machine.config.capacity) {
    own.running += 1;
    return Promise.resolve(release);
  }
  return new Promise((resolve, reject) => {
    const admit = () => {
      signal.removeEventListener("abort", leave);
      own.running += 1;
      resolve(release);
    };
    const leave = () => {
      own.waiting.splice(own.waiting.indexOf(admit), 1);
      reject(signal.reason);
    };
    if (signal.aborted) return reject(signal.reason);
    own.waiting.push(admit);
    signal.addEventListener("abort", leave, { once: true });
  });
}

function once(action: () => void): () => void {
  let done = false;
  return () => {
    if (!done) action();
    done = true;
  };
}
