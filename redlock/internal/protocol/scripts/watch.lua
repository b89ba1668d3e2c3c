-- watch.lua reads the value and the remaining TTL of every lock key: the
-- read that arms the keys of a renewed hold for key tracking on a
-- subscription connection, and tells whether they were still whole then.
-- KEYS: the lock keys.
-- Returns {value, ttl, value, ttl, …} in the order of KEYS: a missing
-- key's value is nil and its TTL -2; a key without TTL has TTL -1.
local reply = {}
for i, key in ipairs(KEYS) do
  reply[2 * i - 1] = redis.call("GET", key)
  reply[2 * i] = redis.call("PTTL", key)
end
return reply
