-- fair_ticket.lua reads the ticket counter of a fair lock: the first round
-- of a waiter's entry into the queue, which takes the ticket after the
-- largest counter of a quorum of nodes (see fair_enqueue.lua).
-- KEYS[1]: the queue. KEYS[2]: the heartbeats. KEYS[3]: the counter.
-- ARGV[1]: the waiter's identity (not used).
-- Returns the counter, 0 when it does not exist.
return tonumber(redis.call("GET", KEYS[3]) or "0")
