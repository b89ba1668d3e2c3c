-- acquire_write.lua takes the writer's key of a read/write lock: only
-- while no writer holds it and no reader's entry is live. Writers come
-- first: a writer that finds live readers leaves a waiting marker, which
-- keeps new readers off until a writer takes the lock (any writer: the
-- writer's key refuses readers from then on) or the marker ends.
-- KEYS: the writer's key, with fencing its counter, then the readers'
-- sorted set (member: a reader's token, score: its expiry in milliseconds
-- of this node's clock) and the waiting marker.
-- ARGV[1]: the token. ARGV[2]: the TTL in milliseconds. ARGV[3]: the
-- waiting marker's TTL in milliseconds, which lasts until the writer's
-- next attempt.
-- Returns OK (with fencing: the counter as a decimal string, "0" when
-- none exists) when the key was set; otherwise how long the node will
-- refuse in milliseconds: the writer's remaining TTL (-1 when it has
-- none), or the time until the last live reader's entry expires.
-- Expiries come from this node's TIME, never from a client's clock. The
-- script begins with the prelude of package decimal (less, decimal); the
-- counter is checked as acquire_fenced.lua checks it.
local fenced = #KEYS == 4
local writer, readers, marker = KEYS[1], KEYS[#KEYS - 1], KEYS[#KEYS]
local counter = "0"
if fenced then
  counter = redis.call("GET", KEYS[2]) or "0"
  if not decimal(counter, "9223372036854775806") then
    return redis.error_reply("FENCE counter " .. KEYS[2] .. " is not a decimal integer from 0 to 9223372036854775806")
  end
end
local held = redis.call("PTTL", writer)
if held ~= -2 then
  return held
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", readers, "-inf", now)
local last = redis.call("ZRANGE", readers, -1, -1, "WITHSCORES")
if last[2] then
  redis.call("SET", marker, ARGV[1], "PX", ARGV[3])
  return math.max(tonumber(last[2]) - now, 0)
end
redis.call("SET", writer, ARGV[1], "PX", ARGV[2])
redis.call("DEL", marker)
if fenced then
  return counter
end
return redis.status_reply("OK")
