-- acquire_multi.lua sets every lock key of a multi-key lock, all or nothing.
-- KEYS: the lock keys. ARGV[1]: the token. ARGV[2]: the TTL in milliseconds.
-- Returns OK when every key was set. When some key already existed, the
-- keys this call set are deleted again, no key is left behind, and it
-- returns how long the node will refuse: the longest remaining TTL of the
-- keys that exist, in milliseconds, or -1 when one of them has no TTL.
-- A key of the wrong type raises WRONGTYPE after that clean-up.
-- remaining returns the longest remaining TTL of the keys, or -1.
local function remaining()
  local longest = 0
  for _, key in ipairs(KEYS) do
    local ttl = redis.call("PTTL", key)
    if ttl == -1 then
      return -1
    end
    if ttl > longest then
      longest = ttl
    end
  end
  return longest
end
for i, key in ipairs(KEYS) do
  if not redis.call("SET", key, ARGV[1], "NX", "PX", ARGV[2]) then
    for j = 1, i - 1 do
      if redis.call("GET", KEYS[j]) == ARGV[1] then
        redis.call("DEL", KEYS[j])
      end
    end
    -- SET NX does not look at the type of an existing key; GET does, and
    -- raises WRONGTYPE for a key that is not a string.
    redis.call("GET", key)
    return remaining()
  end
end
return redis.status_reply("OK")
