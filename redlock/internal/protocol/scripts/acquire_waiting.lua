-- acquire_waiting.lua sets one lock key as SET NX PX does, for a Lock that
-- waits: when the key exists, it tells how long it will live, so that the
-- waiter can try again when it ends.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the TTL in
-- milliseconds.
-- Returns OK when the key was set; otherwise the key's remaining TTL in
-- milliseconds, or -1 when it has none.
local set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
if set then
  return set
end
return redis.call("PTTL", KEYS[1])
