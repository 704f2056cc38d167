import { TAKE_FUNCTION } from "../../limits/redis-take-script.ts";

/**
 * The Lua scripts that keep the distributed mode's money in Redis. Every key lives under the
 * money prefix and the current epoch (`<prefix><epoch>:...`), so a rebuilt copy never mixes with
 * a lost or stale one:
 *
 * - `<prefix>epoch`: the epoch in force, `<id>` once ready, `<id>:pending` while instances put back
 *   the holds they have in flight; missing after a flush (nothing is admitted then);
 * - `k:<key>:<month>` hash: `spent` (what PostgreSQL recorded, brought up to its newest total),
 *   `reserved` (the holds of it) and `loaded` (the copy is whole and may decide);
 * - `c:<account>` hash: `credited` and its `version` (PostgreSQL's), `spent` (as a key month's),
 *   `held`, `loaded`; what is left is credited - spent - held (the callers name an account "a"; the
 *   hashes of an older layout, `a:<account>` with a single balance, are never read and expire);
 * - `h` hash: request id -> hold (`<key>:<month>` or empty, account, prepaid 1|0, amount, kind, ...);
 * - `x` sorted set: request id by expiry (epoch ms), for the sweep.
 *
 * Invariant of a loaded hash: `reserved` (`held`) is the sum of the holds of it in `h`. The keys are
 * built in the scripts from the prefix, so the money needs one Redis (not a Redis Cluster).
 */

// Where an epoch's keys live, from the epoch as stored (`<id>` or `<id>:pending`).
const NAMESPACE = `
local function namespace(M, e)
  local p = string.find(e, ":", 1, true)
  return M .. (p and string.sub(e, 1, p - 1) or e) .. ":"
end
`;

// A hold's first fields (key month, account, prepaid, amount): what the hold and close scripts read.
const HOLD_HEAD = `
local HOLD_HEAD = "^([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)"
`;

// The parts of s between each sep (plain text, not a pattern).
const SPLIT = `
local function split(s, sep)
  local out, start = {}, 1
  while true do
    local i = string.find(s, sep, start, true)
    if not i then out[#out + 1] = string.sub(s, start) return out end
    out[#out + 1] = string.sub(s, start, i - 1)
    start = i + 1
  end
end
`;

const HELPERS = `${NAMESPACE}${SPLIT}${HOLD_HEAD}
local function fields(s) return split(s, "\\t") end

-- Lua numbers are doubles: written back as integers, never as "1e+15".
local function int(x) return string.format("%d", x) end

local function live(M)
  local e = redis.call("GET", M .. "epoch")
  return e and namespace(M, e)
end

-- Adds a hold's amount to the loaded hashes it takes from.
local function shift(N, f)
  local amount = int(tonumber(f[4]))
  if f[1] ~= "" then
    local k = N .. "k:" .. f[1]
    if redis.call("HEXISTS", k, "loaded") == 1 then redis.call("HINCRBY", k, "reserved", amount) end
  end
  if f[3] == "1" then
    local a = N .. "c:" .. f[2]
    if redis.call("HEXISTS", a, "loaded") == 1 then redis.call("HINCRBY", a, "held", amount) end
  end
end

local function addhold(N, id, hold, expires, ttl)
  if redis.call("HSETNX", N .. "h", id, hold) == 0 then return 0 end
  redis.call("ZADD", N .. "x", expires, id)
  redis.call("EXPIRE", N .. "h", ttl)
  redis.call("EXPIRE", N .. "x", ttl)
  shift(N, fields(hold))
  return 1
end

`;

/**
 * Holds an amount for a request, or says why not; when the request's rate-limit counters come with
 * it, they are taken first, in the same call (a 429 before a 402), once the copies can decide (a
 * reply that asks for a load or a new epoch has counted nothing).
 * Its one argument holds, one per line: prefix, epoch, request id, hold (its key month, account,
 * prepaid, amount and expiry are read from it), monthly limit (-1 for none), ttl (s), dry (1|0), then
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
  spend = redis.call("HMGET", k, "spent", "reserved", "loaded")
  if not spend[3] then return {"load", "k"} end
end
if prepaid == "1" then
  a = N .. "c:" .. account
  credit = redis.call("HMGET", a, "credited", "spent", "held", "loaded")
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
-- is renewed by the close that brings them the request's totals. The holds and their index get
-- their TTL when a hold makes them; the epoch's polls renew it (a write per request saved).
if redis.call("HSETNX", N .. "h", id, hold) == 1 then
  -- The expiry is the hold's last field. Anchored: unanchored, Lua would try the pattern at every
  -- position of the hold (tens of microseconds of Redis's one thread per request).
  redis.call("ZADD", N .. "x", string.match(hold, "^.*\\t(.*)$"), id)
  if redis.call("HLEN", N .. "h") == 1 then
    local ttl = tonumber(ARGV[6])
    redis.call("EXPIRE", N .. "h", ttl)
    redis.call("EXPIRE", N .. "x", ttl)
  end
  if k then redis.call("HINCRBY", k, "reserved", amount) end
  if a then redis.call("HINCRBY", a, "held", amount) end
end
return answer({"ok"})
`;

/**
 * Ends holds and brings spends and balances up to what PostgreSQL recorded, in the epoch in force
 * (a close that raced a rebuild still lands where the next decision is taken). The holds of a batch
 * are read, deleted and unindexed in one command each, and their amounts leave each key month and
 * account in one step per copy: a tick that closes many requests of one key costs Redis a few
 * commands, not a few per request.
 * ARGV: prefix, ttl (s), n, n request ids, m, m x (key month, spent), c, c x (account, spent,
 * credited, its version or -1 when the write did not change it).
 */
export const CLOSE_SCRIPT = `${HELPERS}
-- Up to 500 of a list's items from index from on, as values (Lua's stack takes no more at once).
local function slice(list, from) return unpack(list, from, math.min(from + 499, #list)) end

-- Runs a command whose last arguments are a list, a slice at a time.
local function each_slice(list, command, key)
  for from = 1, #list, 500 do redis.call(command, key, slice(list, from)) end
end

-- Gives back what the holds of these request ids (each once) took; an id not held is skipped.
local function unhold_all(N, ids)
  local held, keys, accounts = {}, {}, {}
  for from = 1, #ids, 500 do
    local part = {slice(ids, from)}
    local holds = redis.call("HMGET", N .. "h", unpack(part))
    for j = 1, #part do
      local hold = holds[j]
      if hold then
        held[#held + 1] = part[j]
        local km, account, prepaid, amount = string.match(hold, HOLD_HEAD)
        amount = tonumber(amount)
        if km ~= "" then keys[km] = (keys[km] or 0) + amount end
        if prepaid == "1" then accounts[account] = (accounts[account] or 0) + amount end
      end
    end
  end
  if #held == 0 then return end
  each_slice(held, "HDEL", N .. "h")
  each_slice(held, "ZREM", N .. "x")
  for km, amount in pairs(keys) do
    local k = N .. "k:" .. km
    if redis.call("HEXISTS", k, "loaded") == 1 then redis.call("HINCRBY", k, "reserved", int(-amount)) end
  end
  for account, amount in pairs(accounts) do
    local a = N .. "c:" .. account
    if redis.call("HEXISTS", a, "loaded") == 1 then redis.call("HINCRBY", a, "held", int(-amount)) end
  end
end

local M = ARGV[1]
local N = live(M)
if not N then return 0 end
local ttl = tonumber(ARGV[2])
local i = 3
local n = tonumber(ARGV[i]) i = i + 1
local ids, seen = {}, {}
for _ = 1, n do
  if not seen[ARGV[i]] then seen[ARGV[i]] = true ids[#ids + 1] = ARGV[i] end
  i = i + 1
end
unhold_all(N, ids)
n = tonumber(ARGV[i]) i = i + 1
for _ = 1, n do
  local k = N .. "k:" .. ARGV[i]
  local spent = tonumber(ARGV[i + 1])
  i = i + 2
  if spent > tonumber(redis.call("HGET", k, "spent") or "-1") then redis.call("HSET", k, "spent", ARGV[i - 1]) end
  redis.call("EXPIRE", k, ttl)
end
n = tonumber(ARGV[i]) i = i + 1
for _ = 1, n do
  local a = N .. "c:" .. ARGV[i]
  if tonumber(ARGV[i + 1]) > tonumber(redis.call("HGET", a, "spent") or "-1") then
    redis.call("HSET", a, "spent", ARGV[i + 1])
  end
  local version = tonumber(ARGV[i + 3])
  if version >= 0 and version > tonumber(redis.call("HGET", a, "version") or "-1") then
    redis.call("HSET", a, "credited", ARGV[i + 2], "version", ARGV[i + 3])
  end
  redis.call("EXPIRE", a, ttl)
  i = i + 4
end
return 1
`;

/**
 * Makes a key month's or an account's copy whole from what PostgreSQL holds: its durable
 * reservations become holds, its spend (and what it is credited) the newer of PostgreSQL's and what
 * closes brought, and its reserved (held) the sum of its holds.
 * ARGV: prefix, epoch, "k"|"a", key month | account, spent | credited, version, spent (account),
 * ttl, n, n x (id, hold, expiry).
 */
export const LOAD_SCRIPT = `${HELPERS}
local M, E = ARGV[1], ARGV[2]
local current = redis.call("GET", M .. "epoch")
if current ~= E then return {"epoch", current or ""} end
local N = M .. E .. ":"
local kind, id, micros, version = ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local ttl = tonumber(ARGV[8])
local n = tonumber(ARGV[9])
for j = 0, n - 1 do addhold(N, ARGV[10 + 3 * j], ARGV[11 + 3 * j], ARGV[12 + 3 * j], ttl) end
local key = N .. (kind == "a" and "c" or kind) .. ":" .. id
if redis.call("HEXISTS", key, "loaded") == 1 then return {"ok"} end
local sum = 0
local holds = redis.call("HGETALL", N .. "h")
for j = 2, #holds, 2 do
  local f = fields(holds[j])
  if (kind == "k" and f[1] == id) or (kind == "a" and f[2] == id and f[3] == "1") then
    sum = sum + tonumber(f[4])
  end
end
if kind == "k" then
  if micros > tonumber(redis.call("HGET", key, "spent") or "-1") then redis.call("HSET", key, "spent", ARGV[5]) end
  redis.call("HSET", key, "reserved", int(sum), "loaded", 1)
else
  if version > tonumber(redis.call("HGET", key, "version") or "-1") then
    redis.call("HSET", key, "credited", ARGV[5], "version", ARGV[6])
  end
  if tonumber(ARGV[7]) > tonumber(redis.call("HGET", key, "spent") or "-1") then
    redis.call("HSET", key, "spent", ARGV[7])
  end
  redis.call("HSET", key, "held", int(sum), "loaded", 1)
end
redis.call("EXPIRE", key, ttl)
return {"ok"}
`;

/**
 * Puts back an instance's holds in flight into an epoch being rebuilt (or in force); a hold there
 * already changes nothing. ARGV: prefix, epoch as stored, ttl, n x (id, hold, expiry).
 * Replies `{"ok"}` or `{"epoch", current}`.
 */
export const REGISTER_SCRIPT = `${HELPERS}
local M = ARGV[1]
local current = redis.call("GET", M .. "epoch")
if current ~= ARGV[2] then return {"epoch", current or ""} end
local N = live(M)
local ttl = tonumber(ARGV[3])
for j = 4, #ARGV, 3 do addhold(N, ARGV[j], ARGV[j + 1], ARGV[j + 2], ttl) end
return {"ok"}
`;

/**
 * Hands out holds past their expiry for the sweep, each leased for `lease` ms (a sweeper that dies
 * leaves it to the next). ARGV: prefix, now (ms), lease (ms), limit. Replies id, hold, id, hold...
 */
export const SWEEP_SCRIPT = `${HELPERS}
local M = ARGV[1]
local e = redis.call("GET", M .. "epoch")
if not e or string.find(e, ":", 1, true) then return {} end
local N = M .. e .. ":"
local ids = redis.call("ZRANGEBYSCORE", N .. "x", "-inf", ARGV[2], "LIMIT", 0, tonumber(ARGV[4]))
local out = {}
for _, id in ipairs(ids) do
  local hold = redis.call("HGET", N .. "h", id)
  if hold then
    redis.call("ZADD", N .. "x", tonumber(ARGV[2]) + tonumber(ARGV[3]), id)
    out[#out + 1] = id
    out[#out + 1] = hold
  else
    redis.call("ZREM", N .. "x", id)
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
  local values = redis.call("HMGET", key, "spent", "reserved", "loaded")
  if not values[3] then return {"load"} end
  return {"ok", values[1] or "0", values[2] or "0"}
end
local values = redis.call("HMGET", key, "credited", "spent", "held", "loaded")
if not values[4] then return {"load"} end
return {"ok", string.format("%d", tonumber(values[1] or "0") - tonumber(values[2] or "0")), values[3] or "0"}
`;

/**
 * An operator's change of a balance, taken while PostgreSQL holds the balance's row: refused when
 * the new balance would be below what is held; a decrease is held (as a hold of kind `c`) until
 * the change is committed and closed with its new balance.
 * ARGV: prefix, epoch, account, new balance, change id, hold, expiry (ms), ttl (s), decrease (micros).
 * Replies `{"ok"}`, `{"refused"}`, `{"load", "a"}` or `{"epoch", current}`.
 */
export const CHANGE_SCRIPT = `${HELPERS}
local M, E = ARGV[1], ARGV[2]
local current = redis.call("GET", M .. "epoch")
if current ~= E then return {"epoch", current or ""} end
local N = M .. E .. ":"
local a = N .. "c:" .. ARGV[3]
local credit = redis.call("HMGET", a, "held", "loaded")
if not credit[2] then return {"load", "a"} end
local after = tonumber(ARGV[4])
if after < 0 or after < tonumber(credit[1] or "0") then return {"refused"} end
if tonumber(ARGV[9]) > 0 then addhold(N, ARGV[5], ARGV[6], ARGV[7], tonumber(ARGV[8])) end
return {"ok"}
`;

/**
 * Reads the epoch in force and keeps it alive, with its holds and their index: instances poll it.
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
redis.call("EXPIRE", N .. "x", ttl)
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
