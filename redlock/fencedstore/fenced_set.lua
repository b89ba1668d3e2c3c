-- fenced_set.lua is the storage side of fencing: it writes a value only if
-- the writer's fence is not older than the newest fence seen for it.
-- KEYS[1]: the data key. KEYS[2]: the key that keeps the newest fence.
-- ARGV[1]: the value. ARGV[2]: the writer's fence.
-- Returns {1, fence} when the value was written, {0, newest} when the
-- fence was older than the newest one already applied.
local fence = tonumber(ARGV[2])
local newest = tonumber(redis.call("GET", KEYS[2]) or "0")
if fence < newest then
  return {0, newest}
end
redis.call("SET", KEYS[1], ARGV[1])
redis.call("SET", KEYS[2], ARGV[2])
return {1, fence}
