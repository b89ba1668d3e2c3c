-- acquire_fenced.lua sets every lock key, all or nothing, and returns the
-- resource's fencing counter: the first round of a fenced acquisition.
-- KEYS: the lock keys, then the counter key. ARGV[1]: the token.
-- ARGV[2]: the TTL in milliseconds.
-- Returns the counter (0 when it does not exist yet) when every lock key
-- was set, -1 when some key already existed; then the keys this call set
-- are deleted again. A key of the wrong type raises WRONGTYPE.
local locks = #KEYS - 1
for i = 1, locks do
  if not redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2]) then
    for j = 1, i - 1 do
      if redis.call("GET", KEYS[j]) == ARGV[1] then
        redis.call("DEL", KEYS[j])
      end
    end
    redis.call("GET", KEYS[i])
    return -1
  end
end
return tonumber(redis.call("GET", KEYS[#KEYS]) or "0")
