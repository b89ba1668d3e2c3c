-- permits_free.lua tells which slots of a semaphore are free on this node,
-- without changing anything.
-- KEYS: the slots' keys.
-- Returns one character per key, in order: "0" when the key does not
-- exist, "1" when it does.
local held = {}
for i, key in ipairs(KEYS) do
  if redis.call("PTTL", key) == -2 then
    held[i] = "0"
  else
    held[i] = "1"
  end
end
return table.concat(held)
