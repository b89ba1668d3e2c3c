-- acquire_read.lua adds a reader to a read/write lock: an entry in the
-- readers' sorted set, whose score is its expiry in milliseconds of this
-- node's clock, while no writer holds the writer's key and no writer waits
-- (writers first). A downgrade passes the token of the write hold it
-- turns into a read hold: that writer does not refuse it.
-- KEYS[1]: the readers' sorted set. KEYS[2]: the writer's key. KEYS[3]:
-- the waiting marker. ARGV[1]: the reader's token. ARGV[2]: the TTL in
-- milliseconds. ARGV[3], optional: the token of the write hold that
-- downgrades.
-- Returns OK when the entry was added; otherwise how long the node will
-- refuse in milliseconds: the writer's (or the marker's) remaining TTL,
-- -1 when it has none, or the remaining time of an entry that already
-- has this token.
-- The sorted set lives as long as its longest entry: its TTL is raised to
-- the new entry's, so that it never outlives its readers by more.
local readers, writer, marker = KEYS[1], KEYS[2], KEYS[3]
local holder = redis.call("GET", writer)
if holder and holder ~= ARGV[3] then
  return redis.call("PTTL", writer)
end
if not holder then
  local waiting = redis.call("PTTL", marker)
  if waiting ~= -2 then
    return waiting
  end
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", readers, "-inf", now)
local ttl = tonumber(ARGV[2])
local existing = redis.call("ZSCORE", readers, ARGV[1])
if existing then
  return math.max(tonumber(existing) - now, 0)
end
redis.call("ZADD", readers, now + ttl, ARGV[1])
if redis.call("PTTL", readers) < ttl then
  redis.call("PEXPIRE", readers, ttl)
end
return redis.status_reply("OK")
