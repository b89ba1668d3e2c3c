-- fenced_set.lua is the storage side of fencing: it writes a value only if
-- the writer's fence is not older than the newest fence seen for it.
-- KEYS[1]: the data key. KEYS[2]: the key that keeps the newest fence.
-- ARGV[1]: the value. ARGV[2]: the writer's fence, a decimal integer.
-- Returns {1, fence} when the value was written, {0, newest} when the
-- fence was older than the newest one already applied, the fences as
-- decimal strings.
-- Fences are compared as decimal strings, never as Lua numbers, which are
-- doubles and cannot tell 2^53 from 2^53+1. A fence that is not a decimal
-- integer from 0 to 9223372036854775807, the writer's or the newest, is
-- answered with an error reply "FENCE …", and nothing is written. The
-- script begins with the prelude of package decimal (less, decimal).
local fence = ARGV[2]
local newest = redis.call("GET", KEYS[2]) or "0"
if not decimal(fence, "9223372036854775807") then
  return redis.error_reply("FENCE fence " .. fence .. " is not a decimal integer from 0 to 9223372036854775807")
end
if not decimal(newest, "9223372036854775807") then
  return redis.error_reply("FENCE newest fence " .. KEYS[2] .. " is not a decimal integer from 0 to 9223372036854775807")
end
if less(fence, newest) then
  return {0, newest}
end
redis.call("SET", KEYS[1], ARGV[1])
redis.call("SET", KEYS[2], fence)
return {1, fence}
