import { HELPERS } from "./money-lua.ts";

/**
 * Ends holds and brings the copies up to what PostgreSQL recorded, in the epoch in force (a close
 * that raced a rebuild still lands where the next decision is taken). The holds of a batch are
 * read and deleted in one command each, and each copy is read and written once: a tick
 * that closes many requests of one key costs Redis a few commands, not a few per request.
 *
 * A write's cost reaches a loaded copy once, with its hold, and only when the spend the write left
 * is above the copy's `base` (a write before the load is in the base already). A spend total is
 * never copied into a loaded copy: PostgreSQL's total after one instance's write also holds other
 * instances' writes whose holds are still open, and would count them twice until they close. An
 * unloaded copy keeps the highest total seen, a floor for its load. A copy is "loaded again" when
 * what a write did is not known exactly (a retried write, an expired hold, a reservation row closed
 * in PostgreSQL): its floor rises to the totals read after the write, and the next decision loads
 * it from PostgreSQL.
 *
 * ARGV: prefix, ttl (s),
 *   n, n x (request id, its record's cost, the key month's spend after it, the account's after it),
 *   m, m x ("k"|"c", key month | account, spend after, cost): records that held nothing,
 *   r, r x ("k"|"c", key month | account, spend, credited, its version or -1, load again 1|0):
 *   totals read in PostgreSQL (an operator's change of credits, or copies to load again).
 */
export const CLOSE_SCRIPT = `${HELPERS}
-- Up to 500 of a list's items from index from on, as values (Lua's stack takes no more at once).
local function slice(list, from) return unpack(list, from, math.min(from + 499, #list)) end

-- Runs a command whose last arguments are a list, a slice at a time.
local function each_slice(list, command, key)
  for from = 1, #list, 500 do redis.call(command, key, slice(list, from)) end
end

local M = ARGV[1]
local N = live(M)
if not N then return 0 end
local ttl = tonumber(ARGV[2])

-- The copies this close changes, read once: loaded (from which spend) or not, and what they take.
local copies = {}
local function copy(kind, id)
  local key = N .. kind .. ":" .. id
  local c = copies[key]
  if not c then
    local field = kind == "k" and "reserved" or "held"
    local read = redis.call("HMGET", key, "base", "top", "spent", field)
    c = {base = tonumber(read[1]), top = tonumber(read[2] or "-1"), spent = tonumber(read[3] or "-1"),
      field = field, reserved = tonumber(read[4] or "0"), held = 0, cost = 0, floor = -1}
    copies[key] = c
  end
  return c
end

-- A write that left the copy's spend at after, at a cost.
local function spend(c, after, cost)
  if after > c.floor then c.floor = after end
  if c.base and after > c.base then c.cost = c.cost + cost end
end

local i = 3
local n = tonumber(ARGV[i]) i = i + 1
local ids, records, seen = {}, {}, {}
for _ = 1, n do
  local id = ARGV[i]
  if not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
    records[#ids] = i
  end
  i = i + 4
end
local held = {}
for from = 1, #ids, 500 do
  local part = {slice(ids, from)}
  local holds = redis.call("HMGET", N .. "h", unpack(part))
  for j = 1, #part do
    local hold = holds[j]
    if hold then
      held[#held + 1] = part[j]
      local at = records[from + j - 1]
      local cost = tonumber(ARGV[at + 1])
      local km, account, prepaid, amount = string.match(hold, HOLD_HEAD)
      amount = tonumber(amount)
      if km ~= "" then
        local c = copy("k", km)
        c.held = c.held + amount
        spend(c, tonumber(ARGV[at + 2]), cost)
      end
      if prepaid == "1" then
        local c = copy("c", account)
        c.held = c.held + amount
        spend(c, tonumber(ARGV[at + 3]), cost)
      end
    end
  end
end
if #held > 0 then each_slice(held, "HDEL", N .. "h") end

n = tonumber(ARGV[i]) i = i + 1
for _ = 1, n do
  spend(copy(ARGV[i], ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]))
  i = i + 4
end

n = tonumber(ARGV[i]) i = i + 1
for _ = 1, n do
  local c = copy(ARGV[i], ARGV[i + 1])
  spend(c, tonumber(ARGV[i + 2]), 0)
  if ARGV[i + 5] == "1" then c.again = true end
  local version = tonumber(ARGV[i + 4])
  if version >= 0 and (not c.credited or version > c.credited[2]) then c.credited = {ARGV[i + 3], version} end
  i = i + 6
end

for key, c in pairs(copies) do
  if c.base and not c.again then
    redis.call("HSET", key, c.field, int(c.reserved - c.held), "spent", int(c.spent + c.cost),
      "top", int(math.max(c.top, c.floor)))
  else
    -- Unloaded, or to load again: the highest total known (one PostgreSQL had at some moment, so
    -- that the load counts every write up to it once; never below the spent closes brought) is the
    -- floor of its load.
    local floor = math.max(c.floor, c.top, c.base or -1)
    if floor > c.spent then redis.call("HSET", key, "spent", int(floor)) end
    if c.base then redis.call("HDEL", key, "base", "top") end
  end
  if c.credited and c.credited[2] > tonumber(redis.call("HGET", key, "version") or "-1") then
    redis.call("HSET", key, "credited", c.credited[1], "version", int(c.credited[2]))
  end
  redis.call("EXPIRE", key, ttl)
end
return 1
`;
