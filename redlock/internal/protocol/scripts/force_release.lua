-- force_release.lua deletes a lock key whoever holds it: an administrative
-- release, and announces the release as a holder's would, so that waiters
-- try again.
-- KEYS[1]: the lock key. ARGV[1]: the identity of this release. ARGV[2],
-- optional: the prefix of the sharded release channels (see release.lua).
-- Returns 1 when the node had the key, 0 otherwise.
if redis.call("DEL", KEYS[1]) == 0 then
  return 0
end
if ARGV[2] then
  redis.pcall("SPUBLISH", ARGV[2] .. KEYS[1], ARGV[1])
else
  redis.pcall("PUBLISH", "lockmux:released:" .. KEYS[1], ARGV[1])
end
return 1
