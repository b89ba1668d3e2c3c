-- acquire_fenced.lua sets every lock key, all or nothing, and returns the
-- largest of their fencing counters: the first round of a fenced
-- acquisition.
-- KEYS: the n lock keys, then their n counter keys in the same order.
-- ARGV[1]: the token. ARGV[2]: the TTL in milliseconds.
-- Returns the largest counter as a decimal string ("0" when none exists)
-- when every lock key was set. When some key already existed, the keys
-- this call set are deleted again, and it returns how long the node will
-- refuse: the longest remaining TTL of the lock keys that exist, in
-- milliseconds, or -1 when one of them has no TTL.
-- The counters are compared as decimal strings, never as Lua numbers,
-- which are doubles and cannot tell 2^53 from 2^53+1. A counter that is
-- not a decimal integer from 0 to 9223372036854775806 (the largest with a
-- next fence) is answered with an error reply "FENCE …" before any key is
-- set. A key of the wrong type raises WRONGTYPE. The script begins with
-- the prelude of package decimal (less, decimal).
local locks = #KEYS / 2
local largest = "0"
for i = locks + 1, #KEYS do
  local counter = redis.call("GET", KEYS[i])
  if counter then
    if not decimal(counter, "9223372036854775806") then
      return redis.error_reply("FENCE counter " .. KEYS[i] .. " is not a decimal integer from 0 to 9223372036854775806")
    end
    if less(largest, counter) then
      largest = counter
    end
  end
end
for i = 1, locks do
  if not redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2]) then
    for j = 1, i - 1 do
      if redis.call("GET", KEYS[j]) == ARGV[1] then
        redis.call("DEL", KEYS[j])
      end
    end
    redis.call("GET", KEYS[i])
    local longest = 0
    for j = 1, locks do
      local ttl = redis.call("PTTL", KEYS[j])
      if ttl == -1 then
        return -1
      end
      if ttl > longest then
        longest = ttl
      end
    end
    return longest
  end
end
return largest
