-- acquire_multi.lua sets every lock key of a multi-key lock, all or nothing.
-- KEYS: the lock keys. ARGV[1]: the token. ARGV[2]: the TTL in milliseconds.
-- Returns 1 when every key was set, 0 when some key already existed; then
-- the keys this call set are deleted again and no key is left behind.
-- A key of the wrong type raises WRONGTYPE after that clean-up.
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
    return 0
  end
end
return 1
