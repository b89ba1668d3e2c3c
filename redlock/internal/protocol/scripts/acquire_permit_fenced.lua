-- acquire_permit_fenced.lua is acquire_permit.lua for a Semaphore with
-- fencing: with the slot it sets, it returns that slot's fencing counter,
-- the first round of a fenced acquisition (see acquire_fenced.lua).
-- KEYS: the n candidate slots' keys, then their n counter keys in the same
-- order. ARGV[1]: the token. ARGV[2]: the TTL in milliseconds.
-- Returns "POSITION COUNTER": the position in the candidates of the slot
-- it set, from 0, and its counter as a decimal string ("0" when none
-- exists); otherwise, every candidate held, the shortest remaining TTL of
-- theirs in milliseconds, or -1 when none has one. A counter that is not
-- a decimal integer from 0 to 9223372036854775806 is answered with an
-- error reply "FENCE …", its slot deleted again. The script begins with
-- the prelude of package decimal (less, decimal).
local candidates = #KEYS / 2
local soonest = -1
for i = 1, candidates do
  if redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2]) then
    local counter = redis.call("GET", KEYS[candidates + i]) or "0"
    if not decimal(counter, "9223372036854775806") then
      redis.call("DEL", KEYS[i])
      return redis.error_reply("FENCE counter " .. KEYS[candidates + i] .. " is not a decimal integer from 0 to 9223372036854775806")
    end
    return (i - 1) .. " " .. counter
  end
  local left = redis.call("PTTL", KEYS[i])
  if left >= 0 and (soonest < 0 or left < soonest) then
    soonest = left
  end
end
return soonest
