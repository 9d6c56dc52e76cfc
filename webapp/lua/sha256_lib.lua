-- sha256_lib.lua: SHA-256 and HMAC-SHA256 in plain Lua 5.1 with Redis's `bit` library
-- (Redis gives scripts SHA-1 alone: redis.sha1hex). A drop's draw (drop_lib.lua) ranks
-- its pre-queue inside Redis with these, so its seed never leaves Redis before the
-- reveal, and ranks exactly as webapp/domain/draw.py's draw_rank does.
-- tests/domain/test_sha256_lua.py holds them to Python's hashlib and hmac. Included by
-- the scripts that need it; never run alone. Every word is a signed 32-bit number, as
-- `bit` makes them; sums are brought back to 32 bits with bit.tobit.
local band, bor, bxor, bnot = bit.band, bit.bor, bit.bxor, bit.bnot
local rshift, ror, tobit = bit.rshift, bit.ror, bit.tobit
local sbyte, schar, srep = string.byte, string.char, string.rep

local SHA256_K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}
for i = 1, 64 do
    SHA256_K[i] = tobit(SHA256_K[i])
end

local function sha256_start()
    return {tobit(0x6a09e667), tobit(0xbb67ae85), tobit(0x3c6ef372), tobit(0xa54ff53a),
        tobit(0x510e527f), tobit(0x9b05688c), tobit(0x1f83d9ab), tobit(0x5be0cd19)}
end

local SHA256_W = {}  -- the message schedule, reused by every block

-- Mixes the 64-byte block of `s` starting at byte `at` into the state H (in place).
local function sha256_block(H, s, at)
    local w = SHA256_W
    for j = 1, 16 do
        local a, b, c, d = sbyte(s, at, at + 3)
        w[j] = tobit(((a * 256 + b) * 256 + c) * 256 + d)
        at = at + 4
    end
    for j = 17, 64 do
        local v, u = w[j - 15], w[j - 2]
        local s0 = bxor(ror(v, 7), ror(v, 18), rshift(v, 3))
        local s1 = bxor(ror(u, 17), ror(u, 19), rshift(u, 10))
        w[j] = tobit(w[j - 16] + s0 + w[j - 7] + s1)
    end
    local a, b, c, d, e, f, g, h = H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8]
    for j = 1, 64 do
        local s1 = bxor(ror(e, 6), ror(e, 11), ror(e, 25))
        local ch = bxor(band(e, f), band(bnot(e), g))
        local t1 = h + s1 + ch + SHA256_K[j] + w[j]
        local s0 = bxor(ror(a, 2), ror(a, 13), ror(a, 22))
        local maj = bxor(band(a, b), band(a, c), band(b, c))
        h, g, f, e = g, f, e, tobit(d + t1)
        d, c, b, a = c, b, a, tobit(t1 + s0 + maj)
    end
    H[1], H[2], H[3], H[4] = tobit(H[1] + a), tobit(H[2] + b), tobit(H[3] + c), tobit(H[4] + d)
    H[5], H[6], H[7], H[8] = tobit(H[5] + e), tobit(H[6] + f), tobit(H[7] + g), tobit(H[8] + h)
end

-- Finishes a hash whose state H has taken `before` bytes already (whole blocks): the
-- rest of the message `msg`, its padding and its length. Returns H (changed in place).
local function sha256_finish(H, msg, before)
    local n = #msg
    local bits = (before + n) * 8
    local tail = msg .. '\128' .. srep('\0', (55 - n) % 64)
    -- the length as a 64-bit big-endian number (below 2^53: exact in a double)
    local high, low = math.floor(bits / 4294967296), bits % 4294967296
    local len = ''
    for _, word in ipairs({high, low}) do
        len = len .. schar(math.floor(word / 16777216) % 256, math.floor(word / 65536) % 256,
            math.floor(word / 256) % 256, word % 256)
    end
    tail = tail .. len
    for at = 1, #tail, 64 do
        sha256_block(H, tail, at)
    end
    return H
end

local function sha256_bytes(H)
    local out = {}
    for i = 1, 8 do
        local w = H[i]
        out[i] = schar(band(rshift(w, 24), 255), band(rshift(w, 16), 255),
            band(rshift(w, 8), 255), band(w, 255))
    end
    return table.concat(out)
end

local function sha256_hexof(H)
    local out = {}
    for i = 1, 8 do
        out[i] = bit.tohex(H[i], 8)
    end
    return table.concat(out)
end

local function sha256(msg)  -- the digest's 32 bytes
    return sha256_bytes(sha256_finish(sha256_start(), msg, 0))
end

local function sha256_hex(msg)
    return sha256_hexof(sha256_finish(sha256_start(), msg, 0))
end

local function bytes_hex(s)
    return (string.gsub(s, '.', function(ch) return string.format('%02x', sbyte(ch)) end))
end

local function hex_bytes(h)
    return (string.gsub(h, '%x%x', function(pair) return schar(tonumber(pair, 16)) end))
end

-- HMAC-SHA256 under one key for many messages: the key's inner and outer states are
-- worked out once (each message then costs two blocks when short).
local function hmac_sha256_key(key)
    if #key > 64 then
        key = sha256(key)
    end
    key = key .. srep('\0', 64 - #key)
    local ipad = string.gsub(key, '.', function(ch) return schar(bxor(sbyte(ch), 0x36)) end)
    local opad = string.gsub(key, '.', function(ch) return schar(bxor(sbyte(ch), 0x5c)) end)
    local inner, outer = sha256_start(), sha256_start()
    sha256_block(inner, ipad, 1)
    sha256_block(outer, opad, 1)
    return {inner = inner, outer = outer}
end

-- The key's states as text (16 words), kept beside the seed so that a join need not
-- work them out again (as secret as the seed: they rank as it does), and back.
local function hmac_key_text(ctx)
    local words = {}
    for i = 1, 8 do
        words[i], words[i + 8] = ctx.inner[i], ctx.outer[i]
    end
    return table.concat(words, ',')
end

local function hmac_key_of_text(text)
    local inner, outer, i = {}, {}, 0
    for word in string.gmatch(text, '[^,]+') do
        i = i + 1
        if i <= 8 then
            inner[i] = tonumber(word)
        else
            outer[i - 8] = tonumber(word)
        end
    end
    return {inner = inner, outer = outer}
end

local function copy_state(H)
    return {H[1], H[2], H[3], H[4], H[5], H[6], H[7], H[8]}
end

-- The state of HMAC-SHA256(key, msg) (8 words; sha256_bytes or sha256_hexof reads it).
local function hmac_sha256_state(ctx, msg)
    local inner = sha256_finish(copy_state(ctx.inner), msg, 64)
    return sha256_finish(copy_state(ctx.outer), sha256_bytes(inner), 64)
end

local function hmac_sha256_hex(key, msg)
    return sha256_hexof(hmac_sha256_state(hmac_sha256_key(key), msg))
end

-- A draw's rank (webapp/domain/draw.py draw_rank): the first 52 bits of
-- HMAC-SHA256(seed, id), big-endian, as a number (exact: below 2^53).
local function draw_rank_of(ctx, id)
    local H = hmac_sha256_state(ctx, id)
    local high, low = H[1] % 4294967296, H[2] % 4294967296
    return high * 1048576 + math.floor(low / 4096)
end
