-- semproxy governance: place all of a reservation's holds, or none (atomic in Redis).
-- The same rule as governance/model.py `fit`. KEYS: for hold i, its buckets
-- (charged bucket first), each as hash, zset; then the exclusive markers.
-- ARGV: res, now_ms, lease_ms, low, high, holds, then per hold:
--       buckets, limit, fixed, per_output, ttl_s, marker (index in KEYS, 0: none)
local res, now, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local low, out, n = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])

local k, a, plan = 1, 7, {}
for i = 1, n do
  local buckets, limit = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  local fixed, per, ttl = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4]
  local marker = tonumber(ARGV[a + 5])
  if marker > 0 then
    local holder = redis.call('GET', KEYS[marker])
    if holder and holder ~= res then return {0, i - 1, '0', 1} end
  end
  local sum = 0
  for b = 0, buckets - 1 do
    purge(KEYS[k + 2 * b], KEYS[k + 2 * b + 1], now)
    sum = sum + total(KEYS[k + 2 * b])
  end
  local free = limit - sum - fixed
  if free < 0 or free < per * low then
    return {0, i - 1, int(limit - sum), 0}
  end
  if per > 0 then out = math.min(out, math.floor(free / per)) end
  plan[i] = {k, fixed, per, ttl, limit - sum, marker}
  k, a = k + 2 * buckets, a + 6
end

local answer = {1, out}
for i = 1, n do
  local p = plan[i]
  local amount = p[2] + p[3] * out
  local h, z = KEYS[p[1]], KEYS[p[1] + 1]
  redis.call('HINCRBY', h, 'held', int(amount))
  redis.call('HSET', h, 'r:' .. res, int(amount))
  redis.call('ZADD', z, now + lease, res)
  redis.call('EXPIRE', h, p[4])
  redis.call('EXPIRE', z, p[4])
  if p[6] > 0 then redis.call('SET', KEYS[p[6]], res, 'PX', lease) end
  answer[#answer + 1] = int(p[5] - amount)
end
return answer
