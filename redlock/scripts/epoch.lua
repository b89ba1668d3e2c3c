-- epoch.lua reads, and writes when it must, a node's epoch marker: the key
-- that tells how long this server process has had the data it has. It
-- holds the run_id of the process that wrote it and the node's own time
-- (TIME, in milliseconds) when it did. A restart gives the process a new
-- run_id, a promoted replica has its own, and a flush or a restart without
-- persistence loses the key: each of them may have lost lock keys, and the
-- marker is written anew, so that its age, by the node's clock, is how
-- long the node has certainly kept every key.
-- KEYS[1]: the marker. ARGV[1]: "check", or "trust" for the operator's
-- statement that the node is new and lost nothing: the marker is written
-- as if it were as old as the node's clock.
-- Returns the marker's age in milliseconds: 0 when it was just written.
local server = redis.call("INFO", "server")
local run_id = string.match(server, "run_id:(%w+)")
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if ARGV[1] == "trust" then
  redis.call("SET", KEYS[1], run_id .. " 0")
  return now
end
local marker = redis.call("GET", KEYS[1])
if marker then
  local id, written = string.match(marker, "^(%w+) (%d+)$")
  if id == run_id and written then
    return now - tonumber(written)
  end
end
redis.call("SET", KEYS[1], run_id .. " " .. now)
return 0
