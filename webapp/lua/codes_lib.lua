-- codes_lib.lua: short codes people read aloud and retype (a ticket's support code, a
-- waitlist entry's referral code), in Crockford's base 32: digits and capitals without
-- I, L, O and U, so none is mistaken for another. Never run alone.
local CODE_CHARS = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

-- A code of `length` characters from the hash of `id`, unique in the hash `key` (where
-- it is set to `id`): from the first of `tries` hashes of "<id><salt><attempt>" whose
-- code is free; nil when every one clashes. Each character takes five bits of the hash,
-- lowest first.
local function unique_code(key, id, salt, length, tries)
    local digits = math.ceil(length * 5 / 4)  -- hex digits enough for `length` characters
    for attempt = 0, tries - 1 do
        local n = tonumber(string.sub(redis.sha1hex(id .. salt .. attempt), 1, digits), 16)
        local code = ''
        for _ = 1, length do
            local i = n % 32
            code = code .. string.sub(CODE_CHARS, i + 1, i + 1)
            n = math.floor(n / 32)
        end
        if redis.call('HSETNX', key, code, id) == 1 then
            return code
        end
    end
    return nil
end
