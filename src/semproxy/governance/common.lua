-- semproxy governance: what every script shares (prepended to each one when loaded).
-- A counter is a hash (used, held, n = leases holding, k = 0 when an expired lease
-- is freed rather than counted, r:<reservation> = amount, l:<worker> = lease hold,
-- u:<worker> = use the worker reported in total, q:<worker> = its last sequence)
-- and a sorted set of what holds it, scored by lease end: reservation ids, and
-- l:<worker> for leases (the member is then the hash field too).

-- Numbers go back to Redis as whole decimals: Lua would write 1e15 as "1e+15".
local function int(x)
  return string.format('%.0f', x)
end

local function purge(h, z, now)
  local gone = redis.call('ZRANGEBYSCORE', z, '-inf', now)
  for _, id in ipairs(gone) do
    if string.sub(id, 1, 2) == 'l:' then
      local amount = tonumber(redis.call('HGET', h, id) or '0')
      if amount > 0 then
        redis.call('HSET', h, id, 0)
        redis.call('HINCRBY', h, 'held', int(-amount))
        redis.call('HINCRBY', h, 'n', -1)
        -- its worker stopped syncing: count the hold as used (it may have spent it)
        if redis.call('HGET', h, 'k') ~= '0' then
          redis.call('HINCRBY', h, 'used', int(amount))
        end
      end
    else
      local amount = tonumber(redis.call('HGET', h, 'r:' .. id) or '0')
      redis.call('HDEL', h, 'r:' .. id)
      redis.call('HINCRBY', h, 'held', int(-amount))
    end
  end
  if #gone > 0 then redis.call('ZREMRANGEBYSCORE', z, '-inf', now) end
end

local function total(h)
  local v = redis.call('HMGET', h, 'used', 'held')
  return tonumber(v[1] or '0') + tonumber(v[2] or '0')
end
