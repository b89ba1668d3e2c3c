-- fair_enqueue.lua puts a waiter in the queue of a fair lock with its
-- ticket, and raises the ticket counter to it: the second round of a
-- waiter's entry. A waiter that entered after another one finished
-- entering has a larger ticket, as the fences of the fencing protocol
-- grow: the two quorums share a node whose counter the first raised.
-- KEYS[1]: the queue. KEYS[2]: the heartbeats. KEYS[3]: the counter.
-- ARGV[1]: the waiter's identity. ARGV[2]: its ticket. ARGV[3]: its
-- identity again. ARGV[4]: the heartbeat's TTL in milliseconds.
-- Returns 1. A waiter already in line keeps its ticket. The counter has no
-- TTL, as a fencing counter has none.
local queue, alive, counter = KEYS[1], KEYS[2], KEYS[3]
local ticket, heartbeat = tonumber(ARGV[2]), tonumber(ARGV[4])
if tonumber(redis.call("GET", counter) or "0") < ticket then
  redis.call("SET", counter, ARGV[2])
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call("ZADD", queue, "NX", ticket, ARGV[1])
redis.call("ZADD", alive, now + heartbeat, ARGV[1])
for _, key in ipairs({queue, alive}) do
  if redis.call("PTTL", key) < heartbeat then
    redis.call("PEXPIRE", key, heartbeat)
  end
end
return 1
