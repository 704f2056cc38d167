/** Lua shared by the money scripts (`money-scripts.ts` says which keys they keep). */

// Where an epoch's keys live, from the epoch as stored (`<id>` or `<id>:pending`).
export const NAMESPACE = `
local function namespace(M, e)
  local p = string.find(e, ":", 1, true)
  return M .. (p and string.sub(e, 1, p - 1) or e) .. ":"
end
`;

// A hold's first fields (key month, account, prepaid, amount): what the hold and close scripts read.
export const HOLD_HEAD = `
local HOLD_HEAD = "^([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)"
`;

// The parts of s between each sep (plain text, not a pattern).
export const SPLIT = `
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

export const HELPERS = `${NAMESPACE}${SPLIT}${HOLD_HEAD}
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
    if redis.call("HEXISTS", k, "base") == 1 then redis.call("HINCRBY", k, "reserved", amount) end
  end
  if f[3] == "1" then
    local a = N .. "c:" .. f[2]
    if redis.call("HEXISTS", a, "base") == 1 then redis.call("HINCRBY", a, "held", amount) end
  end
end

local function addhold(N, id, hold, ttl)
  if redis.call("HSETNX", N .. "h", id, hold) == 0 then return 0 end
  redis.call("EXPIRE", N .. "h", ttl)
  shift(N, fields(hold))
  return 1
end

`;
