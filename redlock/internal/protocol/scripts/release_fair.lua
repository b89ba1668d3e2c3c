-- release_fair.lua releases a fair lock's key, as release.lua does, and
-- names the first waiter in line in the announcement, so that the release
-- wakes the next in line only.
-- KEYS[1]: the lock key. KEYS[2]: the queue. KEYS[3]: the heartbeats.
-- KEYS[4]: the ticket counter (not used). ARGV[1]: the token. ARGV[2],
-- optional: the identity of this release. ARGV[3], optional: the prefix
-- of the sharded release channels (see release.lua).
-- Returns 1 when the key was released, 0 when it did not hold the token.
-- It publishes, with an identity, the identity followed by a space and
-- the first waiter in line with a live heartbeat, or the identity alone
-- when nobody waits. A release identity holds no space.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("DEL", KEYS[1])
if ARGV[2] then
  local message = ARGV[2]
  local time = redis.call("TIME")
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  for _, waiter in ipairs(redis.call("ZRANGE", KEYS[2], 0, 15)) do
    local expiry = redis.call("ZSCORE", KEYS[3], waiter)
    if expiry and tonumber(expiry) > now then
      message = message .. " " .. waiter
      break
    end
  end
  if ARGV[3] then
    redis.pcall("SPUBLISH", ARGV[3] .. KEYS[1], message)
  else
    redis.pcall("PUBLISH", "lockmux:released:" .. KEYS[1], message)
  end
end
return 1
