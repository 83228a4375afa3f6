-- semproxy governance: use plus holds over a window's buckets, expired holds purged first.
-- KEYS: per bucket its hash, zset. ARGV: now_ms.
local now, sum = tonumber(ARGV[1]), 0
for b = 1, #KEYS, 2 do
  purge(KEYS[b], KEYS[b + 1], now)
  sum = sum + total(KEYS[b])
end
return int(sum)
