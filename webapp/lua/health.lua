-- health.lua: the readiness probe's round trip through the scripting engine.
-- KEYS: none
-- ARGV: 1 a random nonce
-- Reply: {the nonce, Redis TIME seconds}: the caller checks the nonce came back, so a
--   Redis that answers but lost its scripts (reloaded on NOSCRIPT) or runs none shows.
return {ARGV[1], redis.call('TIME')[1]}
