-- release.lua deletes every lock key that holds the caller's token, and
-- tells the clients waiting for the lock that it is free.
-- KEYS: the lock keys. ARGV[1]: the token. ARGV[2], optional: "quiet" for
-- the clean-up after a failed attempt, which wakes nobody.
-- Returns the number of keys released: #KEYS when the node released the
-- whole hold, 0 when it held none of it (missing, expired or another token).
-- When it released anything, and is not quiet, it publishes the token on
-- "lockmux:released:" .. KEYS[1], which waiting clients subscribe to: the
-- nodes of one release publish the same message, and a client wakes one
-- waiter per release, not one per node. The announcement is made with
-- pcall: a user whom the ACL denies the channel (Redis 7 gives a new user
-- no channel) still releases, and only the announcement is lost.
-- A key of the wrong type raises WRONGTYPE: it is not caught.
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call("GET", key) == ARGV[1] then
    redis.call("DEL", key)
    released = released + 1
  end
end
if released > 0 and ARGV[2] ~= "quiet" then
  redis.pcall("PUBLISH", "lockmux:released:" .. KEYS[1], ARGV[1])
end
return released
