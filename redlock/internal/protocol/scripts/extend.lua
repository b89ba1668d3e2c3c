-- extend.lua sets a new TTL on every lock key, all or nothing, if each of
-- them holds the caller's token.
-- KEYS: the lock keys. ARGV[1]: the token. ARGV[2]: the TTL in milliseconds.
-- Returns 1 when every key was extended; otherwise no key is touched and it
-- returns -1 when some key holds another token, or 0 when some key is
-- missing or expired.
-- Each key is read again after its write, so that a connection that
-- tracks keys with NOLOOP, which its own write leaves unarmed, tracks it
-- again (a renewal sent on a subscription connection).
-- PEXPIRE is used rather than SET XX because it works under maxmemory.
-- A key of the wrong type raises WRONGTYPE: it is not caught.
local missing = false
for _, key in ipairs(KEYS) do
  local value = redis.call("GET", key)
  if not value then
    missing = true
  elseif value ~= ARGV[1] then
    return -1
  end
end
if missing then
  return 0
end
for _, key in ipairs(KEYS) do
  redis.call("PEXPIRE", key, ARGV[2])
  redis.call("GET", key)
end
return 1
