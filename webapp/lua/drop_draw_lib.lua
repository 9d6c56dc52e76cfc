--!include drop_lib.lua
-- drop_draw_lib.lua: a drop's draw, verifiable (docs/drops.md). The seed is made and
-- kept here, in Redis: the app never reads it before the start (Reports reads the
-- seed only once the state is drawn), nobody can change it once its SHA-256 (the
-- commitment) is published, and the start ranks the pre-queue with it exactly as
-- webapp/domain/draw.py's draw_rank: the first 52 bits of HMAC-SHA256(seed, draw id),
-- lower first, ties by the draw id. Included by drop_tick.lua and drop_start.lua.

-- Commits to a fresh seed: the SHA-256 of the caller's 32 random bytes (`nonce`, from
-- Python's secrets) with what only Redis knows (its TIME and 64 draws of its own
-- random generator, which has run since Redis started): the app that sent the nonce
-- cannot work the seed out, and the seed itself never leaves Redis before the start.
local function drop_commit(now, nonce, starts_at)
    local members = {}
    for i = 0, 255 do
        members[#members + 1] = i
    end
    redis.call('SADD', K_POOL, unpack(members))
    local picks = redis.call('SRANDMEMBER', K_POOL, -64)
    redis.call('DEL', K_POOL)
    local time = redis.call('TIME')
    local seed = sha256(nonce .. table.concat(picks, ',') .. ':' .. time[1] .. '.' .. time[2]
        .. ':' .. tostring(math.random()))
    local commitment = sha256_hex(seed)
    redis.call('DEL', K_DRAWN)
    redis.call('HSET', K_DROP, 'state', 'committed', 'seed', bytes_hex(seed),
        'key', hmac_key_text(hmac_sha256_key(seed)),
        'commitment', commitment, 'committed_at', tostring(now), 'drawn_at', '',
        'entries', 0, 'starts_at', starts_at and tostring(starts_at) or '')
    redis.call('EXPIRE', K_DROP, DROP_TTL)
    audit(now, 'draw_commit', nil, commitment)
    return commitment
end

-- The start: everyone still in the pre-queue (present: not overdue), ranked by the
-- draw, put at the head of the line in that order, the seed revealed, then seats
-- offered as they allow. Returns how many were drawn, or -1 if the draw was held
-- already (a second start does nothing).
local function drop_start(now, lease, s, nonce, starts_at)
    local state = redis.call('HGET', K_DROP, 'state') or ''
    if state == 'drawn' then
        return -1
    end
    if state ~= 'committed' then
        drop_commit(now, nonce, starts_at)
    end
    local seed_hex = redis.call('HGET', K_DROP, 'seed')
    local ctx = nil  -- made only for tickets not ranked at their join
    local drawn = {}
    local members = redis.call('ZRANGE', K_PREQUEUE, 0, -1, 'WITHSCORES')
    for i = 1, #members, 2 do
        local token, rank = members[i], tonumber(members[i + 1])
        local t = get_ticket(token)
        local due = tonumber(redis.call('ZSCORE', K_CHECKIN, token))
        if t and t.st == 'waiting' and t.pq and due then
            if due < lease then
                end_ticket(token, t, 'dropped', now)
            else
                local id = t.di or draw_id_of(token)
                if rank < 0 then
                    ctx = ctx or hmac_sha256_key(hex_bytes(seed_hex))
                    rank = draw_rank_of(ctx, id)
                end
                drawn[#drawn + 1] = {rank = rank, id = id, token = token, t = t}
            end
        end
    end
    table.sort(drawn, function(x, y)
        if x.rank ~= y.rank then
            return x.rank < y.rank
        end
        return x.id < y.id
    end)
    local n = #drawn
    -- At the head of the line: before anyone already in it (scores below the head's),
    -- else the next n numbers of the line's sequence.
    local head = redis.call('ZRANGE', K_LINE, 0, 0, 'WITHSCORES')
    local first
    if head[2] then
        first = tonumber(head[2]) - n
    else
        first = redis.call('INCRBY', K_SEQ, math.max(n, 1)) - math.max(n, 1) + 1
        created(K_SEQ)
    end
    local admitted = tonumber(redis.call('HGET', K_STATS, 'line:admitted')) or 0
    local ids = {}
    for i, e in ipairs(drawn) do
        local t = e.t
        t.pq, t.seq, t.di = nil, first + i - 1, e.id
        t.pj, t.j = t.j, now  -- its wait in line (the estimates' figure) starts now
        t.k, t.c = i - 1, admitted
        redis.call('ZADD', K_LINE, t.seq, e.token)
        put_ticket(e.token, t)
        ids[#ids + 1] = e.id
        if #ids == 1000 then
            redis.call('RPUSH', K_DRAWN, unpack(ids))
            ids = {}
        end
    end
    if #ids > 0 then
        redis.call('RPUSH', K_DRAWN, unpack(ids))
    end
    if n > 0 then
        created(K_LINE)
        redis.call('EXPIRE', K_DRAWN, DROP_TTL)
    end
    redis.call('DEL', K_PREQUEUE)
    redis.call('HSET', K_DROP, 'state', 'drawn', 'drawn_at', tostring(now), 'entries', n)
    redis.call('HDEL', K_DROP, 'key')
    audit(now, 'draw_reveal', nil, seed_hex .. ' ' .. n)
    promote(now, lease, math.max(BATCH, s.capacity), s)
    return n
end
