-- decimal.lua is the prelude of the scripts that keep fencing counters and
-- fences: they compare them as decimal strings, never as Lua numbers, which
-- are doubles and cannot tell 2^53 from 2^53+1.
-- less compares two decimal integers without leading zeros.
local function less(a, b)
  if #a ~= #b then
    return #a < #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return false
end
-- decimal tells whether text is a decimal integer without sign or leading
-- zeros from 0 to largest.
local function decimal(text, largest)
  return text == "0" or (string.find(text, "^[1-9][0-9]*$") ~= nil and not less(largest, text))
end
