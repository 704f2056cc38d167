import { type CounterSpec, clockWindowKey, clockWindowStart, type TakeResult } from "./counter-store.ts";

// Keys live a little past their window, so an instance whose clock lags a bit still finds them.
const TTL_SLACK_MS = 2_000;

/**
 * The whole `take` as a Lua function, so a script that calls it runs it atomically: read every
 * counter's window, refuse if any is at its limit (writing nothing), else count toward all of
 * them. A key gets its TTL in the step that starts its window (the window's end never moves after),
 * so no key ever lives without one. The money's hold script calls it too, so a request that holds
 * money is counted in the same call.
 *
 * keys: one per counter (a "clock" key already names its window).
 * args: now, slack, then per counter: limit, windowMs, "clock" | "from-first", clock window start.
 * Returns {1, count1, resetAt1, count2, resetAt2, ...} or {0, refusedIndex, resetAt}.
 * A "from-first" counter is a hash {count, start}; a "clock" counter is a plain integer.
 */
export const TAKE_FUNCTION = `
local function take(keys, args)
  local now = tonumber(args[1])
  local slack = tonumber(args[2])
  local counts, ends, fresh, kinds = {}, {}, {}, {}
  for i, key in ipairs(keys) do
    local at = 3 + (i - 1) * 4
    local limit = tonumber(args[at])
    local window = tonumber(args[at + 1])
    local kind = args[at + 2]
    local count, windowEnd, isFresh = 0, 0, false
    if kind == "from-first" then
      local saved = redis.call("HMGET", key, "count", "start")
      if saved[1] and saved[2] and now < tonumber(saved[2]) + window then
        count = tonumber(saved[1])
        windowEnd = tonumber(saved[2]) + window
      else
        windowEnd = now + window
        isFresh = true
      end
    else
      count = tonumber(redis.call("GET", key) or "0")
      windowEnd = tonumber(args[at + 3]) + window
    end
    if count >= limit then
      return {0, i - 1, windowEnd}
    end
    counts[i], ends[i], fresh[i], kinds[i] = count, windowEnd, isFresh, kind
  end
  local reply = {1}
  for i, key in ipairs(keys) do
    if kinds[i] == "from-first" and fresh[i] then
      redis.call("HSET", key, "count", 1, "start", args[1])
      redis.call("PEXPIRE", key, ends[i] - now + slack)
    elseif kinds[i] == "from-first" then
      redis.call("HINCRBY", key, "count", 1)
    elseif redis.call("INCR", key) == 1 then
      redis.call("PEXPIRE", key, ends[i] - now + slack)
    end
    reply[#reply + 1] = counts[i] + 1
    reply[#reply + 1] = ends[i]
  end
  return reply
end
`;

/** The `take` on its own: KEYS and ARGV as `take`'s keys and args. */
export const TAKE_SCRIPT = `${TAKE_FUNCTION}
return take(KEYS, ARGV)
`;

/** KEYS and ARGV of the script for these counters. */
export function takeScriptArgs(
  counters: CounterSpec[],
  now: number,
  prefix: string,
): { keys: string[]; args: string[] } {
  const keys: string[] = [];
  const args = [String(Math.floor(now)), String(TTL_SLACK_MS)];
  for (const spec of counters) {
    keys.push(counterKey(spec, now, prefix));
    pushCounterArgs(args, spec, now);
  }
  return { keys, args };
}

/**
 * The counters as trailing arguments of another script that calls `take` (keys, too, are passed as
 * arguments there), appended to `to`: count, then `take`'s args, then its keys.
 */
export function pushInlineTakeArgs(to: string[], counters: CounterSpec[], now: number, prefix: string): void {
  to.push(String(counters.length), String(Math.floor(now)), String(TTL_SLACK_MS));
  for (const spec of counters) pushCounterArgs(to, spec, now);
  for (const spec of counters) to.push(counterKey(spec, now, prefix));
}

/** A counter's four `take` args: limit, window, kind, the start of its clock window. */
function pushCounterArgs(to: string[], spec: CounterSpec, now: number): void {
  to.push(String(spec.limit), String(spec.windowMs), spec.kind, String(clockWindowStart(now, spec.windowMs)));
}

/** Where a counter lives in Redis (a clock window's counter carries its window's start). */
function counterKey(spec: CounterSpec, now: number, prefix: string): string {
  return (
    prefix +
    (spec.kind === "clock" ? clockWindowKey(spec.key, clockWindowStart(now, spec.windowMs)) : spec.key)
  );
}

/** What the counters of an allowed take came to, from a reply holding them as pairs from `from` on. */
export function countedFrom(reply: readonly unknown[], from: number): TakeResult {
  const counters = [];
  for (let i = from; i + 1 < reply.length; i += 2) {
    counters.push({ count: Number(reply[i]), resetAt: Number(reply[i + 1]) });
  }
  return { allowed: true, counters };
}

/** Turns the script's reply into a TakeResult. */
export function parseTakeReply(reply: unknown): TakeResult {
  if (!Array.isArray(reply) || reply.length < 1) throw new Error("unexpected rate-limit script reply");
  if (Number(reply[0]) === 0) {
    return { allowed: false, refused: Number(reply[1] ?? 0), resetAt: Number(reply[2] ?? 0) };
  }
  return countedFrom(reply, 1);
}
