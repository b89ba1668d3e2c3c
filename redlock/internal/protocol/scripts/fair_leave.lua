-- fair_leave.lua takes a waiter out of the queue of a fair lock: a Lock
-- that gave up, or that got the lock on other nodes.
-- KEYS[1]: the queue. KEYS[2]: the heartbeats. KEYS[3]: the counter (not
-- used). ARGV[1]: the waiter's identity.
-- Returns 1 when it was in the queue, 0 otherwise.
redis.call("ZREM", KEYS[2], ARGV[1])
return redis.call("ZREM", KEYS[1], ARGV[1])
