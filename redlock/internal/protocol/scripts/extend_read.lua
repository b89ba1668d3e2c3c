-- extend_read.lua gives a live reader of a read/write lock a new expiry.
-- KEYS[1]: the readers' sorted set. ARGV[1]: the reader's token. ARGV[2]:
-- the TTL in milliseconds.
-- Returns 1 when the entry was extended, 0 when it is missing or expired
-- (nothing is changed).
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expiry = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= now then
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call("ZADD", KEYS[1], "XX", now + ttl, ARGV[1])
if redis.call("PTTL", KEYS[1]) < ttl then
  redis.call("PEXPIRE", KEYS[1], ttl)
end
return 1
