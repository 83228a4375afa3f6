-- semproxy governance: one worker's lease sync, all counters and ledger batches at once.
-- The rule is governance/lease.py `apply_ask`. KEYS: per ask its buckets (charged
-- first) as hash, zset; then per ledger batch its "done" marker and its spend hashes
-- (a day's, an hour's and a minute's sums).
-- ARGV: worker, now_ms, lease_ms, asks, then per ask:
--       buckets, limit, ttl_s, keep (0/1), seq, spent, want, need;
--       then batches, and per batch: spend hashes, then per hash: ttl_s, fields,
--       field/amount pairs.
-- Answers per ask: hold, free, holders.
local w, now, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local lf, uf, qf = 'l:' .. w, 'u:' .. w, 'q:' .. w
local k, a, answer = 1, 5, {}
for i = 1, tonumber(ARGV[4]) do
  local buckets, limit, ttl = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), ARGV[a + 2]
  local keep, seq, spent = ARGV[a + 3], tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local want, need = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local h, z = KEYS[k], KEYS[k + 1]
  local sum = 0
  for b = 0, buckets - 1 do
    purge(KEYS[k + 2 * b], KEYS[k + 2 * b + 1], now)
    sum = sum + total(KEYS[k + 2 * b])
  end
  local v = redis.call('HMGET', h, lf, uf, qf)
  local hold, reported = tonumber(v[1] or '0'), tonumber(v[2] or '0')
  if seq > tonumber(v[3] or '0') then
    local used = math.max(spent - reported, 0)
    local converted = math.min(used, hold)
    local base = hold - converted
    local free = math.max(limit - (sum + used - converted), 0)
    local new = base
    if want <= base then
      new = want
    elseif base + free >= need then
      new = base + math.min(want - base, free)
    end
    if used > 0 then redis.call('HINCRBY', h, 'used', int(used)) end
    if new ~= hold then redis.call('HINCRBY', h, 'held', int(new - hold)) end
    if hold == 0 and new > 0 then redis.call('HINCRBY', h, 'n', 1) end
    if hold > 0 and new == 0 then redis.call('HINCRBY', h, 'n', -1) end
    redis.call('HSET', h, lf, int(new), uf, int(math.max(reported, spent)), qf, int(seq),
               'k', keep)
    if new > 0 then redis.call('ZADD', z, now + lease, lf) else redis.call('ZREM', z, lf) end
    redis.call('EXPIRE', h, ttl)
    redis.call('EXPIRE', z, ttl)
    sum = sum + used - (hold - new)
    hold = new
  end
  answer[#answer + 1] = int(hold)
  answer[#answer + 1] = int(limit - sum)
  answer[#answer + 1] = int(tonumber(redis.call('HGET', h, 'n') or '0'))
  k, a = k + 2 * buckets, a + 8
end
local batches = tonumber(ARGV[a])
a = a + 1
for _ = 1, batches do
  local hashes = tonumber(ARGV[a])
  local fresh = redis.call('SET', KEYS[k], '1', 'NX', 'EX', 86400)
  a, k = a + 1, k + 1
  for _ = 1, hashes do
    local ttl, fields, h = ARGV[a], tonumber(ARGV[a + 1]), KEYS[k]
    for f = 0, fields - 1 do
      if fresh then redis.call('HINCRBY', h, ARGV[a + 2 + 2 * f], ARGV[a + 3 + 2 * f]) end
    end
    if fresh and redis.call('TTL', h) < 0 then redis.call('EXPIRE', h, ttl) end
    a, k = a + 2 + 2 * fields, k + 1
  end
end
return answer
