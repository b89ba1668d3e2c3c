-- check_read.lua tells whether a reader's entry of a read/write lock is
-- live, to resume its hold.
-- KEYS[1]: the readers' sorted set. ARGV[1]: the reader's token.
-- Returns the entry's remaining time in milliseconds (> 0), or -2 when it
-- is missing or expired.
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expiry = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not expiry or tonumber(expiry) <= now then
  return -2
end
return tonumber(expiry) - now
