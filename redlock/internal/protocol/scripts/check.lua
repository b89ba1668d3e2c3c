-- check.lua tells whether every lock key holds the caller's token, to resume
-- a hold.
-- KEYS: the lock keys. ARGV[1]: the token.
-- Returns the smallest remaining TTL in milliseconds (>= 0) when every key
-- holds the token, -3 when some key holds another token, otherwise -2 when
-- some key is missing, otherwise -1 when some key has no TTL.
-- A key of the wrong type raises WRONGTYPE: it is not caught.
local smallest = nil
local missing = false
local persistent = false
for _, key in ipairs(KEYS) do
  local value = redis.call("GET", key)
  if not value then
    missing = true
  elseif value ~= ARGV[1] then
    return -3
  else
    local ttl = redis.call("PTTL", key)
    if ttl < 0 then
      persistent = true
    elseif smallest == nil or ttl < smallest then
      smallest = ttl
    end
  end
end
if missing then
  return -2
end
if persistent then
  return -1
end
return smallest or -2
