-- release_read.lua removes a reader from a read/write lock, and tells the
-- clients waiting for the readers to leave.
-- KEYS[1]: the readers' sorted set. ARGV[1]: the reader's token. ARGV[2],
-- optional: the identity of this release, and ARGV[3], optional: the
-- prefix of the sharded release channels (see release.lua).
-- Returns 1 when the entry was removed, 0 when there was none.
local removed = redis.call("ZREM", KEYS[1], ARGV[1])
if removed == 1 and ARGV[3] then
  redis.pcall("SPUBLISH", ARGV[3] .. KEYS[1], ARGV[2])
elseif removed == 1 and ARGV[2] then
  redis.pcall("PUBLISH", "lockmux:released:" .. KEYS[1], ARGV[2])
end
return removed
