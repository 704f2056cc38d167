import { TAKE_FUNCTION } from "../../limits/redis-take-script.ts";
import { HELPERS, HOLD_HEAD, NAMESPACE, SPLIT } from "./money-lua.ts";

/**
 * The Lua scripts that keep the distributed mode's money in Redis. Every key lives under the
 * money prefix and the current epoch (`<prefix><epoch>:...`), so a rebuilt copy never mixes with
 * a lost or stale one:
 *
 * - `<prefix>epoch`: the epoch in force, `<id>` once ready, `<id>:pending` while instances put back
 *   the holds they have in flight; missing after a flush (nothing is admitted then);
 * - `k:<key>:<month>` hash: `spent` (what PostgreSQL recorded: see the invariants below),
 *   `reserved` (the holds of it), and once the copy is whole and may decide, `base` (the spend
 *   PostgreSQL had recorded when it was loaded) and `top` (the highest spend a write since then left);
 * - `c:<account>` hash: `credited` and its `version` (PostgreSQL's), `spent` (as a key month's),
 *   `held`, `base`, `top`; what is left is credited - spent - held (the callers name an account "a"; the
 *   hashes of an older layout, `a:<account>` with a single balance, are never read and expire);
 * - `h` hash: request id -> hold (`<key>:<month>` or empty, account, prepaid 1|0, amount, kind, ...);
 *
 * Invariants of a loaded hash: `reserved` (`held`) is the sum of the holds of it in `h`; `spent` is
 * `base` plus the cost of every write closed since the load that left a spend above `base` (each
 * write closes once, with its hold; see the close script). An unloaded hash's `spent` is the highest
 * spend a write is known to have left, a floor for its load. The keys are
 * built in the scripts from the prefix, so the money needs one Redis (not a Redis Cluster).
 */

/**
 * Holds an amount for a request, or says why not; when the request's rate-limit counters come with
 * it, they are taken first, in the same call (a 429 before a 402), once the copies can decide (a
 * reply that asks for a load or a new epoch has counted nothing).
 * Its one argument holds, one per line: prefix, epoch, request id, hold (its key month, account,
 * prepaid and amount are read from it), monthly limit (-1 for none), ttl (s), dry (1|0), then
 * optionally the counters as `pushInlineTakeArgs` lays them out (one argument, not a dozen: each
 * argument costs the client an allocation or four per request).
 * Replies `{"ok", counted...}`, `{"refused", code, counted...}`, `{"limited", refused index, reset}`,
 * `{"load", "k"|"a"}` or `{"epoch", current}`; `counted` is what `take` replies past its leading 1.
 */
export const HOLD_SCRIPT = `${TAKE_FUNCTION}${SPLIT}${HOLD_HEAD}
-- The one argument, split: the rest reads its lines as ARGV[i].
local ARGV = split(ARGV[1], "\\n")
local M, E, id, hold = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local current = redis.call("GET", M .. "epoch")
if current ~= E then return {"epoch", current or ""} end
local N = M .. E .. ":"
local km, account, prepaid, amount = string.match(hold, HOLD_HEAD)
local k, a, spend, credit
if km ~= "" then
  k = N .. "k:" .. km
  spend = redis.call("HMGET", k, "spent", "reserved", "base")
  if not spend[3] then return {"load", "k"} end
end
if prepaid == "1" then
  a = N .. "c:" .. account
  credit = redis.call("HMGET", a, "credited", "spent", "held", "base")
  if not credit[4] then return {"load", "a"} end
end
local counted = {}
local n = tonumber(ARGV[8] or "0")
if n > 0 then
  local keys, args = {}, {}
  for j = 1, 2 + 4 * n do args[j] = ARGV[8 + j] end
  for j = 1, n do keys[j] = ARGV[10 + 4 * n + j] end
  local taken = take(keys, args)
  if taken[1] == 0 then return {"limited", taken[2], taken[3]} end
  for j = 2, #taken do counted[#counted + 1] = taken[j] end
end
local function answer(reply)
  for _, value in ipairs(counted) do reply[#reply + 1] = value end
  return reply
end
local need = tonumber(amount)
if k then
  local limit = tonumber(ARGV[5])
  if limit >= 0 and tonumber(spend[1] or "0") + tonumber(spend[2] or "0") + need > limit then
    return answer({"refused", "spending_limit_reached"})
  end
end
if a then
  -- A request that costs nothing still needs some credit left.
  if tonumber(credit[1] or "0") - tonumber(credit[2] or "0") - tonumber(credit[3] or "0") < math.max(need, 1) then
    return answer({"refused", "insufficient_credits"})
  end
end
if ARGV[7] == "1" then return answer({"ok"}) end
-- As addhold, for copies known loaded (read above): the amount goes straight into them. Their TTL
-- is renewed by the close that brings them the request's cost. The holds get
-- their TTL when a hold makes them; the epoch's polls renew it (a write per request saved).
if redis.call("HSETNX", N .. "h", id, hold) == 1 then
  if redis.call("HLEN", N .. "h") == 1 then redis.call("EXPIRE", N .. "h", tonumber(ARGV[6])) end
  if k then redis.call("HINCRBY", k, "reserved", amount) end
  if a then redis.call("HINCRBY", a, "held", amount) end
end
return answer({"ok"})
`;

/**
 * Makes a key month's or an account's copy whole from what PostgreSQL holds: its durable
 * reservations become holds, its spend (and what it is credited) the newer of PostgreSQL's and what
 * closes brought (its `base`), and its reserved (held) the sum of its holds.
 * ARGV: prefix, epoch, "k"|"a", key month | account, spent | credited, version, spent (account),
 * ttl, n, n x (id, hold).
 */
export const LOAD_SCRIPT = `${HELPERS}
local M, E = ARGV[1], ARGV[2]
local current = redis.call("GET", M .. "epoch")
if current ~= E then return {"epoch", current or ""} end
local N = M .. E .. ":"
local kind, id, micros, version = ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local ttl = tonumber(ARGV[8])
local n = tonumber(ARGV[9])
for j = 0, n - 1 do addhold(N, ARGV[10 + 2 * j], ARGV[11 + 2 * j], ttl) end
local key = N .. (kind == "a" and "c" or kind) .. ":" .. id
if redis.call("HEXISTS", key, "base") == 1 then return {"ok"} end
local sum = 0
local holds = redis.call("HGETALL", N .. "h")
for j = 2, #holds, 2 do
  local f = fields(holds[j])
  if (kind == "k" and f[1] == id) or (kind == "a" and f[2] == id and f[3] == "1") then
    sum = sum + tonumber(f[4])
  end
end
-- The spend from which closes count: PostgreSQL's, or the higher one a write was seen to leave.
local spent = kind == "k" and micros or tonumber(ARGV[7])
spent = int(math.max(spent, tonumber(redis.call("HGET", key, "spent") or "-1")))
if kind == "k" then
  redis.call("HSET", key, "spent", spent, "reserved", int(sum), "base", spent, "top", spent)
else
  if version > tonumber(redis.call("HGET", key, "version") or "-1") then
    redis.call("HSET", key, "credited", ARGV[5], "version", ARGV[6])
  end
  redis.call("HSET", key, "spent", spent, "held", int(sum), "base", spent, "top", spent)
end
redis.call("EXPIRE", key, ttl)
return {"ok"}
`;

/**
 * Puts back an instance's holds in flight into an epoch being rebuilt (or in force); a hold there
 * already changes nothing. ARGV: prefix, epoch as stored, ttl, n x (id, hold).
 * Replies `{"ok"}` or `{"epoch", current}`.
 */
export const REGISTER_SCRIPT = `${HELPERS}
local M = ARGV[1]
local current = redis.call("GET", M .. "epoch")
if current ~= ARGV[2] then return {"epoch", current or ""} end
local N = live(M)
local ttl = tonumber(ARGV[3])
for j = 4, #ARGV, 2 do addhold(N, ARGV[j], ARGV[j + 1], ttl) end
return {"ok"}
`;

/**
 * Hands out holds past their expiry (a hold's last field) for the sweep, from one step of a scan of
 * the holds; each is leased for `lease` ms (its expiry moved on: a sweeper that dies leaves it to the
 * next). ARGV: prefix, now (ms), lease (ms), how many to scan, the scan's cursor ("0" to begin).
 * Replies the next cursor ("0" at the end), then id, hold (as it was), id, hold...
 */
export const SWEEP_SCRIPT = `${HELPERS}
local M = ARGV[1]
local e = redis.call("GET", M .. "epoch")
if not e or string.find(e, ":", 1, true) then return {"0"} end
local N = M .. e .. ":"
local now = tonumber(ARGV[2])
local scanned = redis.call("HSCAN", N .. "h", ARGV[5], "COUNT", ARGV[4])
local out = {scanned[1]}
local found = scanned[2]
for j = 1, #found, 2 do
  local hold = found[j + 1]
  -- Anchored: the last tab, then the expiry.
  local head, expires = string.match(hold, "^(.*\\t)(.*)$")
  if head and tonumber(expires) <= now then
    redis.call("HSET", N .. "h", found[j], head .. int(now + tonumber(ARGV[3])))
    out[#out + 1] = found[j]
    out[#out + 1] = hold
  end
end
return out
`;

/**
 * Reads a copy: `{"ok", spent|balance, reserved|held}`, `{"load"}` or `{"epoch", current}`; a
 * balance is credited - spent.
 * ARGV: prefix, epoch, "k"|"a", key month | account.
 */
export const READ_SCRIPT = `
local M, E = ARGV[1], ARGV[2]
local current = redis.call("GET", M .. "epoch")
if current ~= E then return {"epoch", current or ""} end
local key = M .. E .. ":" .. (ARGV[3] == "a" and "c" or ARGV[3]) .. ":" .. ARGV[4]
if ARGV[3] == "k" then
  local values = redis.call("HMGET", key, "spent", "reserved", "base")
  if not values[3] then return {"load"} end
  return {"ok", values[1] or "0", values[2] or "0"}
end
local values = redis.call("HMGET", key, "credited", "spent", "held", "base")
if not values[4] then return {"load"} end
return {"ok", string.format("%d", tonumber(values[1] or "0") - tonumber(values[2] or "0")), values[3] or "0"}
`;

/**
 * An operator's change of a balance, taken while PostgreSQL holds the balance's row: refused when
 * the new balance would be below what is held; a decrease is held (as a hold of kind `c`) until
 * the change is committed and closed with its new balance.
 * ARGV: prefix, epoch, account, new balance, change id, hold, ttl (s), decrease (micros).
 * Replies `{"ok"}`, `{"refused"}`, `{"load", "a"}` or `{"epoch", current}`.
 */
export const CHANGE_SCRIPT = `${HELPERS}
local M, E = ARGV[1], ARGV[2]
local current = redis.call("GET", M .. "epoch")
if current ~= E then return {"epoch", current or ""} end
local N = M .. E .. ":"
local a = N .. "c:" .. ARGV[3]
local credit = redis.call("HMGET", a, "held", "base")
if not credit[2] then return {"load", "a"} end
local after = tonumber(ARGV[4])
if after < 0 or after < tonumber(credit[1] or "0") then return {"refused"} end
if tonumber(ARGV[8]) > 0 then addhold(N, ARGV[5], ARGV[6], tonumber(ARGV[7])) end
return {"ok"}
`;

/**
 * Reads the epoch in force and keeps it alive, with its holds: instances poll it.
 * ARGV: prefix, ttl (s).
 */
export const EPOCH_SCRIPT = `${NAMESPACE}
local key = ARGV[1] .. "epoch"
local e = redis.call("GET", key)
if not e then return "" end
local ttl = tonumber(ARGV[2])
redis.call("EXPIRE", key, ttl)
local N = namespace(ARGV[1], e)
redis.call("EXPIRE", N .. "h", ttl)
return e
`;

/** Makes a pending epoch the one in force. ARGV: prefix, pending epoch as stored, id, ttl (s). */
export const READY_SCRIPT = `
local key = ARGV[1] .. "epoch"
if redis.call("GET", key) ~= ARGV[2] then return 0 end
redis.call("SET", key, ARGV[3], "EX", tonumber(ARGV[4]))
redis.call("DEL", ARGV[1] .. "rebuild")
return 1
`;

/** Drops the epoch when it is still `ARGV[2]` (Redis restarted from a snapshot). ARGV: prefix, epoch. */
export const DROP_SCRIPT = `
local key = ARGV[1] .. "epoch"
if redis.call("GET", key) ~= ARGV[2] then return 0 end
redis.call("DEL", key)
return 1
`;
