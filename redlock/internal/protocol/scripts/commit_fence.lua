-- commit_fence.lua raises the fencing counter of every lock key to the
-- fence of a hold, if the node still holds it: the second round of a
-- fenced acquisition. A counter never goes down and has no TTL.
-- KEYS: the n lock keys, then their n counter keys in the same order.
-- ARGV[1]: the token. ARGV[2]: the fence, a decimal integer.
-- Returns 1 when every lock key holds the token (every counter is then at
-- least the fence), 0 otherwise (nothing is changed).
-- The counters are compared as decimal strings, never as Lua numbers. A
-- counter that is not a decimal integer from 0 to 9223372036854775807 is
-- answered with an error reply "FENCE …", and nothing is changed. The
-- script begins with the prelude of package decimal (less, decimal).
local locks = #KEYS / 2
for i = 1, locks do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local counters = {}
for i = locks + 1, #KEYS do
  local counter = redis.call("GET", KEYS[i]) or "0"
  if not decimal(counter, "9223372036854775807") then
    return redis.error_reply("FENCE counter " .. KEYS[i] .. " is not a decimal integer from 0 to 9223372036854775807")
  end
  counters[i] = counter
end
for i = locks + 1, #KEYS do
  if less(counters[i], ARGV[2]) then
    redis.call("SET", KEYS[i], ARGV[2])
  end
end
return 1
