-- acquire_fair.lua sets the lock key of a fair lock for the first waiter
-- in line: the waiters wait in a queue ordered by their tickets, and a
-- waiter that is not first, or a newcomer while anybody waits, is refused.
-- The queue decides who may try; the lock key alone decides who holds.
-- KEYS[1]: the lock key; with fencing, its counter follows. Then the
-- queue, a sorted set of the waiters scored by their tickets; the waiters'
-- heartbeats, a sorted set scored by each waiter's expiry in milliseconds
-- of this node's clock; the ticket counter (not used here).
-- ARGV[1]: the token. ARGV[2]: the TTL in milliseconds. ARGV[3],
-- optional: the waiter's identity, for a waiter in the queue. ARGV[4]:
-- with ARGV[3], the heartbeat's TTL in milliseconds.
-- Returns OK when the key was set (the waiter leaves the queue), or with
-- fencing the lock's counter as a decimal string ("0" when none exists);
-- otherwise how long the node will refuse in milliseconds: the lock key's
-- remaining TTL (-1 when it has none), or, for a waiter behind another,
-- the time until the first waiter's heartbeat lapses at the latest; or -2
-- for a waiter that is not in the queue: its heartbeat lapsed, or this
-- node served it in an attempt that failed, and it must join again.
-- A waiter whose heartbeat lapsed leaves the queue: its process stopped
-- trying. Expiries come from this node's TIME, never a client's clock.
-- The script begins with the prelude of package decimal (less, decimal);
-- the counter is checked as acquire_fenced.lua checks it.
local fenced = #KEYS == 5
local lock, queue, alive = KEYS[1], KEYS[#KEYS - 2], KEYS[#KEYS - 1]
local granted = redis.status_reply("OK")
if fenced then
  granted = redis.call("GET", KEYS[2]) or "0"
  if not decimal(granted, "9223372036854775806") then
    return redis.error_reply("FENCE counter " .. KEYS[2] .. " is not a decimal integer from 0 to 9223372036854775806")
  end
end
local id = ARGV[3]
if not id and redis.call("EXISTS", queue) == 0 then
  -- A newcomer, nobody in line: the plain acquisition, SET NX PX.
  if redis.call("SET", lock, ARGV[1], "NX", "PX", ARGV[2]) then
    return granted
  end
  return redis.call("PTTL", lock)
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for _, gone in ipairs(redis.call("ZRANGEBYSCORE", alive, "-inf", now)) do
  redis.call("ZREM", queue, gone)
end
redis.call("ZREMRANGEBYSCORE", alive, "-inf", now)
local queued = id and redis.call("ZSCORE", queue, id)
if queued then
  local heartbeat = tonumber(ARGV[4])
  redis.call("ZADD", alive, now + heartbeat, id)
  for _, key in ipairs({queue, alive}) do
    if redis.call("PTTL", key) < heartbeat then
      redis.call("PEXPIRE", key, heartbeat)
    end
  end
end
local lost = id and not queued -- a waiter whose place is gone
local held = redis.call("PTTL", lock)
if held ~= -2 then
  if lost then
    return -2
  end
  return held
end
local first = redis.call("ZRANGE", queue, 0, 0)[1]
while first and not redis.call("ZSCORE", alive, first) do
  redis.call("ZREM", queue, first) -- in line without a heartbeat
  first = redis.call("ZRANGE", queue, 0, 0)[1]
end
if first and first ~= id then
  if lost then
    return -2
  end
  return math.max(tonumber(redis.call("ZSCORE", alive, first)) - now, 0)
end
redis.call("SET", lock, ARGV[1], "PX", ARGV[2])
if id then
  redis.call("ZREM", queue, id)
  redis.call("ZREM", alive, id)
end
return granted
