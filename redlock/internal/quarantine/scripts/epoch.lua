-- epoch.lua reads, and writes when it must, a node's epoch marker: the key
-- that tells how long this server has certainly kept every key it had.
-- The marker is "RUN_ID WRITTEN REPLID REWRITES": the run_id of the server
-- process that wrote it, the node's time then (TIME, in milliseconds), that
-- server's replication ID, and its count of append-only file rewrites. A restart gives a new run_id, and a
-- promotion a new replication ID; a flush or a restart without
-- persistence loses the marker. Each may have lost lock keys, and the
-- marker is written anew, so that its age, by the node's clock, is how
-- long the node has certainly kept every key.
-- Writing anew, a server that shows no sign of having lost a key since it
-- started (a master never promoted, no flush, swap, DEBUG, REPLICAOF,
-- FAILOVER, CONFIG RESETSTAT or eviction in its statistics; Redis 7 or
-- later, whose statistics name subcommands) dates the marker back to its
-- start: a server up for longer than the longest TTL is trusted at once.
-- A restart of a server that fsyncs every write to its append-only file
-- (appendonly yes, appendfsync always) loses nothing it acknowledged. Such
-- a server writes " durable" after the marker in its append-only file
-- alone: its keyspace, its snapshots and its replicas have the plain form,
-- so only its own restart reads the durable form, and keeps the marker's
-- age. A rewrite of the file keeps the plain form: the next check writes
-- the durable one again, and a restart before it is quarantined.
-- The marker is written only when it changes: clients watch it.
-- KEYS[1]: the marker. ARGV[1]: "check", or "trust" for the operator's
-- statement that the node is new and lost nothing: the marker is written
-- as if it were as old as the node's clock. ARGV[2]: "durable" from a
-- client whose connection found appendfsync always (the script cannot
-- ask CONFIG), "" otherwise.
-- Returns the marker's age in milliseconds (0 when it was just written)
-- and what marker.lua answers after a vote while nothing changed:
-- "MARKER/REPLID", the marker as the keyspace holds it and the server's
-- replication ID.
pcall(redis.replicate_commands) -- before set_repl on Redis 6; a no-op on 7
local server = redis.call("INFO", "server")
local replication = redis.call("INFO", "replication")
local run_id = string.match(server, "run_id:(%w+)")
local replid = string.match(replication, "master_replid:(%w+)")
-- A promoted replica keeps its old master's replication ID as its second
-- one until it restarts.
local promoted = not string.match(replication, "second_repl_offset:%-1")
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local persistence = redis.call("INFO", "persistence")
local durable = ARGV[2] == "durable" and not promoted and string.match(persistence, "aof_enabled:1") ~= nil
-- A rewrite under way may have copied the keyspace's plain form already.
local rewrites = tonumber(string.match(persistence, "aof_rewrites:(%d+)")) or 0
if string.match(persistence, "aof_rewrite_in_progress:1") then
  rewrites = rewrites + 1
end

local function write(written)
  local marker = run_id .. " " .. written .. " " .. replid .. " " .. rewrites
  if durable then
    redis.set_repl(redis.REPL_AOF)
    redis.call("SET", KEYS[1], marker .. " durable")
    redis.set_repl(redis.REPL_SLAVE)
  end
  redis.call("SET", KEYS[1], marker)
  redis.set_repl(redis.REPL_ALL)
  return marker
end

-- kept returns how long the server has certainly kept every key: since
-- its start, when nothing in its statistics says it may have lost one.
local function kept()
  local major = tonumber(string.match(server, "redis_version:(%d+)"))
  if promoted or not major or major < 7 or not string.match(replication, "role:master")
      or not string.match(redis.call("INFO", "stats"), "evicted_keys:0\r") then
    return 0
  end
  local commands = redis.call("INFO", "commandstats")
  for _, name in ipairs({"flushall", "flushdb", "swapdb", "debug", "replicaof", "slaveof", "failover",
      "config|resetstat", "cluster|failover", "cluster|reset"}) do
    if string.find(commands, "cmdstat_" .. name .. ":", 1, true) then
      return 0
    end
  end
  return (tonumber(string.match(server, "uptime_in_seconds:(%d+)")) or 0) * 1000
end

-- reading is what marker.lua answers while the marker and the server stay.
local function reading(marker)
  return marker .. "/" .. replid
end

if ARGV[1] == "trust" then
  return {now, reading(write(0))}
end
local marker = redis.call("GET", KEYS[1])
if marker then
  local id, written, marker_replid, marker_rewrites, flag = string.match(marker, "^(%w+) (%d+) (%w+) (%d+)( ?%a*)$")
  -- The same process, not a replica since it wrote the marker (a first
  -- replica also changes the ID, without a promotion); or the restart of a
  -- durable server that read its own durable form.
  local same = id == run_id and (marker_replid == replid or not promoted)
  local restarted = id ~= run_id and flag == " durable" and durable
  if written and (same or restarted) then
    if id ~= run_id or marker_replid ~= replid or (durable and tonumber(marker_rewrites) ~= rewrites) then
      marker = write(written)
    end
    return {now - tonumber(written), reading(marker)}
  end
end
local age = kept()
return {age, reading(write(now - age))}
