-- release.lua deletes every lock key that holds the caller's token, and
-- tells the clients waiting for those keys that they are free.
-- KEYS: the lock keys. ARGV[1]: the token. ARGV[2], optional: the identity
-- of this release, which Unlock draws at random; the clean-up after a
-- failed attempt leaves it out, and wakes nobody. ARGV[3], optional, with
-- an identity: the prefix of the release channels on a Client with a
-- Redis Cluster member, a hash tag of the keys' slot in it.
-- Returns the number of keys released: #KEYS when the node released the
-- whole hold, 0 when it held none of it (missing, expired or another token).
-- With an identity, it publishes the identity on "lockmux:released:" ..
-- key for every key it released, which waiting clients subscribe to: the
-- nodes of one release publish the same message, so a client wakes one
-- waiter per release and key, not one per node, and tells two releases of
-- one token apart. With ARGV[3], the announcement is SPUBLISH on
-- ARGV[3] .. key (sharded pub/sub: the channel is in the keys' slot, on
-- their master). The announcement is made with pcall: a user whom the
-- ACL denies the channel (Redis 7 gives a new user no channel) still
-- releases, and only the announcement is lost.
-- A key of the wrong type raises WRONGTYPE: it is not caught.
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call("GET", key) == ARGV[1] then
    redis.call("DEL", key)
    released = released + 1
    if ARGV[3] then
      redis.pcall("SPUBLISH", ARGV[3] .. key, ARGV[2])
    elseif ARGV[2] then
      redis.pcall("PUBLISH", "lockmux:released:" .. key, ARGV[2])
    end
  end
end
return released
