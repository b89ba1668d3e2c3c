-- commit_fence.lua raises the resource's fencing counter to the fence of a
-- hold, if the node still holds it: the second round of a fenced
-- acquisition. The counter never goes down and has no TTL.
-- KEYS: the lock keys, then the counter key. ARGV[1]: the token.
-- ARGV[2]: the fence.
-- Returns 1 when every lock key holds the token (the counter is then at
-- least the fence), 0 otherwise (nothing is changed).
local locks = #KEYS - 1
for i = 1, locks do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local fence = tonumber(ARGV[2])
if tonumber(redis.call("GET", KEYS[#KEYS]) or "0") < fence then
  redis.call("SET", KEYS[#KEYS], ARGV[2])
end
return 1
