-- semproxy governance: turn a reservation's holds into use, once (atomic in Redis).
-- KEYS: the reservation's "settled" marker, then per counter hash, zset, then the
--       exclusive markers, then the spend hashes (one per period) to add to.
-- ARGV: res, marker_ttl_s, counters, then per counter: amount, ttl_s, marker (index
--       in KEYS, 0: none); then spend hashes count, each hash's ttl_s, fields count,
--       field/amount pairs (the same fields go to every hash).
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then return 0 end
local res, n = ARGV[1], tonumber(ARGV[3])
local k, a = 2, 4
for i = 1, n do
  local h, z = KEYS[k], KEYS[k + 1]
  local held = redis.call('HGET', h, 'r:' .. res)
  if held then
    redis.call('HDEL', h, 'r:' .. res)
    redis.call('HINCRBY', h, 'held', int(-tonumber(held)))
    redis.call('ZREM', z, res)
  end
  local amount = tonumber(ARGV[a])
  if amount ~= 0 then redis.call('HINCRBY', h, 'used', int(amount)) end
  if redis.call('TTL', h) < 0 then redis.call('EXPIRE', h, ARGV[a + 1]) end
  local marker = tonumber(ARGV[a + 2])
  if marker > 0 and redis.call('GET', KEYS[marker]) == res then
    redis.call('DEL', KEYS[marker])
  end
  k, a = k + 2, a + 3
end
local hashes = tonumber(ARGV[a])
local fields = tonumber(ARGV[a + 1 + hashes])
local pairs_at = a + 2 + hashes
local first = #KEYS - hashes + 1
for s = 0, hashes - 1 do
  local h = KEYS[first + s]
  for f = 0, fields - 1 do
    redis.call('HINCRBY', h, ARGV[pairs_at + 2 * f], ARGV[pairs_at + 1 + 2 * f])
  end
  if redis.call('TTL', h) < 0 then redis.call('EXPIRE', h, ARGV[a + 1 + s]) end
end
return 1
