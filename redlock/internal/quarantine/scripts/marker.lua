-- marker.lua follows a vote on the same connection: it reads the node's
-- epoch marker and the server's replication ID, which a vote's verdict
-- needs both of. A server demoted and promoted again over a connection
-- that stayed up may hold the same marker as before, copied back from its
-- replica without the last writes; only its new replication ID tells.
-- KEYS[1]: the marker. Returns "MARKER/REPLID", MARKER empty when missing.
local replication = redis.call("INFO", "replication")
return (redis.call("GET", KEYS[1]) or "") .. "/" .. string.match(replication, "master_replid:(%w+)")
