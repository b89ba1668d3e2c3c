-- release.lua deletes every lock key that holds the caller's token.
-- KEYS: the lock keys. ARGV[1]: the token.
-- Returns the number of keys released: #KEYS when the node released the
-- whole hold, 0 when it held none of it (missing, expired or another token).
-- A key of the wrong type raises WRONGTYPE: it is not caught.
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call("GET", key) == ARGV[1] then
    redis.call("DEL", key)
    released = released + 1
  end
end
return released
