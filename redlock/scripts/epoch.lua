-- epoch.lua reads, and writes when it must, a node's epoch marker: the key
-- that tells how long this server process has had the data it has. It
-- holds the run_id of the process that wrote it and the node's own time
-- (TIME, in milliseconds) when it did. A restart gives the process a new
-- run_id, a promoted replica has its own, and a flush or a restart without
-- persistence loses the key: each of them may have lost lock keys, and the
-- marker is written anew, so that its age, by the node's clock, is how
-- long the node has certainly kept every key.
-- A restart of a server that writes every write to its append-only file
-- and fsyncs it before it answers (appendonly yes, appendfsync always)
-- loses nothing it acknowledged: a marker that says its writer ran so,
-- kept by a server that runs so too and was not promoted from a replica
-- since it started, keeps its age. The marker then ends
-- with " durable", refreshed at each check: a change of appendfsync at run
-- time between two clients' connections is not seen.
-- KEYS[1]: the marker. ARGV[1]: "check", or "trust" for the operator's
-- statement that the node is new and lost nothing: the marker is written
-- as if it were as old as the node's clock. ARGV[2]: "durable" from a
-- client whose connection found appendfsync always (the script cannot
-- ask CONFIG), "" otherwise.
-- Returns the marker's age in milliseconds: 0 when it was just written.
local server = redis.call("INFO", "server")
local run_id = string.match(server, "run_id:(%w+)")
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local durable = ""
if ARGV[2] == "durable" and string.match(redis.call("INFO", "persistence"), "aof_enabled:1")
    and string.match(redis.call("INFO", "replication"), "second_repl_offset:%-1") then
  -- A promoted replica keeps its old master's replication ID as its
  -- second one: a server promoted since it started is never durable here.
  durable = " durable"
end
if ARGV[1] == "trust" then
  redis.call("SET", KEYS[1], run_id .. " 0" .. durable)
  return now
end
local marker = redis.call("GET", KEYS[1])
if marker then
  local id, written, kept = string.match(marker, "^(%w+) (%d+)( ?%a*)$")
  if written and (id == run_id or (kept == " durable" and durable == " durable")) then
    if id ~= run_id or kept ~= durable then
      redis.call("SET", KEYS[1], run_id .. " " .. written .. durable)
    end
    return now - tonumber(written)
  end
end
redis.call("SET", KEYS[1], run_id .. " " .. now .. durable)
return 0
