-- repair_read.lua adds a reader's entry again on a node that lost it,
-- unless a writer holds the node.
-- KEYS[1]: the readers' sorted set. KEYS[2]: the writer's key. ARGV[1]:
-- the reader's token. ARGV[2]: the TTL in milliseconds.
-- Returns 1, or -1 when a writer holds the key (nothing is changed); a
-- repair's replies are not awaited.
if redis.call("EXISTS", KEYS[2]) == 1 then
  return -1
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZADD", KEYS[1], now + ttl, ARGV[1])
if redis.call("PTTL", KEYS[1]) < ttl then
  redis.call("PEXPIRE", KEYS[1], ttl)
end
return 1
