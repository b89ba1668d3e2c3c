-- acquire_permit.lua wins one permit of a semaphore in one round: it tries
-- the candidate slots in the order given and sets the first that is free,
-- as SET NX PX does. Every node is given the same candidates in the same
-- order, so nodes that agree on which slots are held set the same one.
-- KEYS: the candidate slots' keys. ARGV[1]: the token. ARGV[2]: the TTL in
-- milliseconds.
-- Returns the position in KEYS of the slot it set, counted from 0, as a
-- string; otherwise, every candidate held, the shortest remaining TTL of
-- theirs in milliseconds, or -1 when none has one.
local soonest = -1
for i, key in ipairs(KEYS) do
  if redis.call("SET", key, ARGV[1], "NX", "PX", ARGV[2]) then
    return tostring(i - 1)
  end
  local left = redis.call("PTTL", key)
  if left >= 0 and (soonest < 0 or left < soonest) then
    soonest = left
  end
end
return soonest
