"""The upstream HTTP client behind one small interface (`base.Transport`): aiohttp, the
echo demo upstream, the pool guard, reply caps and SSE reading."""
