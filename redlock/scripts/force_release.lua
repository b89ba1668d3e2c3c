-- force_release.lua deletes a lock key whoever holds it: an administrative
-- release, and announces the release as a holder's would, so that waiters
-- try again.
-- KEYS[1]: the lock key. ARGV[1]: the identity of this release.
-- Returns 1 when the node had the key, 0 otherwise.
if redis.call("DEL", KEYS[1]) == 0 then
  return 0
end
redis.pcall("PUBLISH", "lockmux:released:" .. KEYS[1], ARGV[1])
return 1
