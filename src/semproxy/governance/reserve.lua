-- semproxy governance: place all of a reservation's holds, or none (atomic in Redis).
-- The same rule as governance/model.py `fit`. Per counter two keys: a hash
-- (used, held, r:<reservation> = amount held) and a sorted set of the
-- reservations holding it, scored by lease end, so an abandoned hold expires.
-- KEYS: for hold i, its buckets (charged bucket first), each as hash, zset.
-- ARGV: res, now_ms, lease_ms, low, high, holds, then per hold:
--       buckets, limit, fixed, per_output, ttl_s
local res, now, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local low, out, n = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])

local function purge(h, z)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, id in ipairs(gone) do
    local amount = tonumber(redis.call('HGET', h, 'r:' .. id) or '0')
    redis.call('HDEL', h, 'r:' .. id)
    redis.call('HINCRBY', h, 'held', -amount)
  end
  if #gone > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
end

local k, a, plan = 1, 7, {}
for i = 1, n do
  local buckets, limit = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local fixed, per, ttl = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4]
  local total = 0
  for b = 0, buckets - 1 do
    local h, z = KEYS[k + 2 * b], KEYS[k + 2 * b + 1]
    purge(h, z)
    local v = redis.call('HMGET', h, 'used', 'held')
    total = total + tonumber(v[1] or '0') + tonumber(v[2] or '0')
  end
  local free = limit - total - fixed
  if free < 0 or free < per * low then
    return {0, i - 1, string.format('%.0f', limit - total)}
  end
  if per > 0 then out = math.min(out, math.floor(free / per)) end
  plan[i] = {k, fixed, per, ttl, limit - total}
  k, a = k + 2 * buckets, a + 5
end

local answer = {1, out}
for i = 1, n do
  local p = plan[i]
  local amount = p[2] + p[3] * out
  local h, z = KEYS[p[1]], KEYS[p[1] + 1]
  redis.call('HINCRBY', h, 'held', amount)
  redis.call('HSET', h, 'r:' .. res, amount)
  redis.call('ZADD', z, now + lease, res)
  redis.call('EXPIRE', h, p[4])
  redis.call('EXPIRE', z, p[4])
  answer[#answer + 1] = string.format('%.0f', p[5] - amount)
end
return answer
