-- repair.lua sets the lock keys of a hold again on a node that lost some or
-- all of them (a restart without its data, an eviction), unless one of them
-- holds another token: after an extension that a quorum confirmed, on a
-- node the hold had.
-- KEYS: the lock keys. ARGV[1]: the token. ARGV[2]: the TTL in
-- milliseconds.
-- Returns 1 when every key was set to the token with the TTL (the keys
-- the node kept included), -1 when some key holds another token: then
-- nothing is changed. A key of the wrong type raises WRONGTYPE.
for _, key in ipairs(KEYS) do
  local value = redis.call("GET", key)
  if value and value ~= ARGV[1] then
    return -1
  end
end
for _, key in ipairs(KEYS) do
  redis.call("SET", key, ARGV[1], "PX", ARGV[2])
end
return 1
