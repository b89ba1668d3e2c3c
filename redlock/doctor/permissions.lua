-- permissions.lua calls every command that the lock scripts call, on a
-- probe key that no lock uses, each with pcall, and tells which ones met
-- an error: the ACL checks the commands a script calls, and the keys and
-- channels they touch, as if the user sent them.
-- KEYS[1]: the probe key. KEYS[2], optional: its fencing counter.
-- ARGV[1]: a value. ARGV[2]: the probe key's release channel. ARGV[3]:
-- the command that announces a release there, PUBLISH or SPUBLISH; its
-- result is named "publish" either way.
-- Returns a flat array: a command's name, then "" when it ran or the error
-- it met, for each command. Every key it sets has a TTL of ten seconds,
-- and it deletes them again.
local results = {}
local function try(name, ...)
  local reply = redis.pcall(...)
  local err = ""
  if type(reply) == "table" and reply.err then
    err = reply.err
  end
  results[#results + 1] = name
  results[#results + 1] = err
end
try("set", "SET", KEYS[1], ARGV[1], "PX", 10000)
try("get", "GET", KEYS[1])
try("pttl", "PTTL", KEYS[1])
try("pexpire", "PEXPIRE", KEYS[1], 10000)
try("publish", ARGV[3], ARGV[2], ARGV[1])
if KEYS[2] then
  try("set", "SET", KEYS[2], "0", "PX", 10000)
  try("del", "DEL", KEYS[2])
end
try("del", "DEL", KEYS[1])
return results
