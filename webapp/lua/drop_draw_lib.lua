--!include drop_lib.lua
--!keys drop_drawn drop_pool
-- drop_draw_lib.lua: a drop's draw, verifiable (docs/drops.md). The seed is made and
-- kept here, in Redis: the app never reads it before the start (Reports reads the
-- seed only once the state is drawn), nobody can change it once its SHA-256 (the
-- commitment) is published, and the start ranks the pre-queue with it exactly as
-- webapp/domain/draw.py's draw_rank: the first 52 bits of HMAC-SHA256(seed, draw id),
-- lower first, ties by the draw id. Included by drop_tick.lua and drop_start.lua.
--
-- The start places the pre-queue a slice per call, so no call holds Redis long
-- whatever its size (100,000 at once held it about 2 s): the first call reserves line
-- numbers for all of it ahead of anyone in line and marks the room (the clock hash's
-- "placing"); each call then takes the best-ranked still in the pre-queue and gives
-- them the next numbers, in the draw's order, until its time budget is spent; the
-- last reveals the seed. Whoever calls next carries on (the sweep, an admin's start,
-- a join that found the start owed), so a start whose caller died still ends. While it
-- runs, a ticket not yet placed is still in the pre-queue (position 0), a placed one
-- has only placed ones ahead of it (its place is final), and a ticket that joined the
-- line otherwise counts everyone still to place ahead of it and is offered no seat
-- before them (room_base.lua PLACING).

-- Commits to a fresh seed: the SHA-256 of the caller's 32 random bytes (`nonce`, from
-- Python's secrets) with what only Redis knows (its TIME and 64 draws of its own
-- random generator, which has run since Redis started): the app that sent the nonce
-- cannot work the seed out, and the seed itself never leaves Redis before the start.
local function drop_commit(now, nonce, starts_at)
    local members = {}
    for i = 0, 255 do
        members[#members + 1] = i
    end
    redis.call('SADD', K_DROP_POOL, unpack(members))
    local picks = redis.call('SRANDMEMBER', K_DROP_POOL, -64)
    redis.call('DEL', K_DROP_POOL)
    local time = redis.call('TIME')
    local seed = sha256(nonce .. table.concat(picks, ',') .. ':' .. time[1] .. '.' .. time[2]
        .. ':' .. tostring(math.random()))
    local commitment = sha256_hex(seed)
    redis.call('DEL', K_DROP_DRAWN)
    redis.call('HSET', K_DROP, 'state', 'committed', 'seed', bytes_hex(seed),
        'key', hmac_key_text(hmac_sha256_key(seed)),
        'commitment', commitment, 'committed_at', tostring(now), 'drawn_at', '',
        'entries', 0, 'starts_at', starts_at and tostring(starts_at) or '')
    redis.call('EXPIRE', K_DROP, DROP_TTL)
    audit(now, 'draw_commit', nil, commitment)
    return commitment
end

-- The start's first call: the seed committed if it was not, line numbers reserved for
-- the whole pre-queue (before anyone already in line: below the head's; else the
-- sequence's next), the room marked as placing.
local function drop_begin(now, nonce, starts_at)
    if (redis.call('HGET', K_DROP, 'state') or '') ~= 'committed' then
        drop_commit(now, nonce, starts_at)
    end
    local n = redis.call('ZCARD', K_DROP_PREQUEUE)
    local head = redis.call('ZRANGE', K_LINE, 0, 0, 'WITHSCORES')
    local first
    if head[2] then
        first = tonumber(head[2]) - n
    else
        first = redis.call('INCRBY', K_SEQ, math.max(n, 1)) - math.max(n, 1) + 1
        created(K_SEQ)
    end
    redis.call('HSET', K_DROP, 'state', 'placing', 'drawn_at', tostring(now), 'entries', 0,
        'first', tostring(first), 'reserved', n,
        'c0', tonumber(redis.call('HGET', K_STATS, 'line:admitted')) or 0)
    if n > 0 then
        PLACING = first + n - 1
        redis.call('HSET', K_CLOCK, 'placing', tostring(PLACING))
    end
end

-- The start's last step: the seed revealed, the room no longer placing.
local function drop_finish(now, seed_hex, n)
    redis.call('DEL', K_DROP_PREQUEUE)
    redis.call('HSET', K_DROP, 'state', 'drawn', 'entries', n)
    redis.call('HDEL', K_DROP, 'key', 'first', 'reserved', 'c0')
    redis.call('HDEL', K_CLOCK, 'placing')
    PLACING = nil
    audit(now, 'draw_reveal', nil, seed_hex .. ' ' .. n)
    emit('drop.started', now, nil, nil, {commitment = redis.call('HGET', K_DROP, 'commitment'),
        seed = seed_hex, entries = n})
end

-- Calls `fn` with the list in chunks of 1,000 (unpack's stack is bounded).
local function in_chunks(list, fn)
    for i = 1, #list, 1000 do
        fn(unpack(list, i, math.min(i + 999, #list)))
    end
end

-- One slice of the start: at most `limit` of the pre-queue, the best-ranked (and every
-- tie of the last rank, so ties go by draw id across slices too), taken in the draw's
-- order until `budget` microseconds are spent. Each present one is placed at the next
-- reserved number (its wait in line starts at the start), an overdue one dropped, an
-- ended one forgotten. Tickets not ranked at their join (-1, ahead of every rank) are
-- ranked first. Returns how many are placed so far and whether any are left.
local function drop_place(now, lease, limit, budget)
    local p = redis.call('HMGET', K_DROP, 'first', 'entries', 'c0', 'seed', 'drawn_at')
    local first, placed, c0 = tonumber(p[1]), tonumber(p[2]) or 0, tonumber(p[3]) or 0
    local seed_hex, began = p[4], tonumber(p[5]) or now
    local work = 0
    local function spent()
        work = work + 1
        return work % 8 == 0 and slice_spent() >= budget
    end
    local unranked = redis.call('ZRANGEBYSCORE', K_DROP_PREQUEUE, -1, -1, 'LIMIT', 0, limit)
    if #unranked > 0 then
        local ctx = hmac_sha256_key(hex_bytes(seed_hex))
        for _, token in ipairs(unranked) do
            local t = get_ticket(token)
            local id = t and t.di or draw_id_of(token)
            redis.call('ZADD', K_DROP_PREQUEUE, draw_rank_of(ctx, id), token)
            if spent() then
                break
            end
        end
        return placed, true
    end
    local last = redis.call('ZRANGE', K_DROP_PREQUEUE, limit - 1, limit - 1, 'WITHSCORES')
    local members
    if last[2] then
        members = redis.call('ZRANGEBYSCORE', K_DROP_PREQUEUE, '-inf', last[2], 'WITHSCORES')
    else
        members = redis.call('ZRANGE', K_DROP_PREQUEUE, 0, -1, 'WITHSCORES')
    end
    local taken, ids = {}, {}
    local function place(e)
        local t = e.t
        taken[#taken + 1] = e.token
        local due = t and tonumber(redis.call('ZSCORE', K_CHECKIN, e.token))
        if t and t.st == 'waiting' and t.pq and due then
            if due < lease then
                end_ticket(e.token, t, 'dropped', now)
            else
                t.pq, t.seq, t.di = nil, first + placed, e.id
                t.pj, t.j = t.j, began  -- its wait in line (the estimates' figure) starts now
                t.k, t.c = placed, c0
                placed = placed + 1
                redis.call('ZADD', K_LINE, t.seq, e.token)
                put_ticket(e.token, t)
                count_emailed(t, 1)
                ids[#ids + 1] = e.id
            end
        end
    end
    -- In rank order (the sorted set's), a run of equal ranks at a time, by draw id: a
    -- ticket is read only when its turn comes, so the budget bounds the work.
    local at = 1
    while at < #members do
        local rank, run = members[at + 1], {}
        repeat
            local token = members[at]
            local t = get_ticket(token)
            run[#run + 1] = {token = token, t = t, id = t and t.di or draw_id_of(token)}
            at = at + 2
        until at > #members or members[at + 1] ~= rank
        if #run > 1 then
            table.sort(run, function(x, y) return x.id < y.id end)
        end
        for _, e in ipairs(run) do
            place(e)
        end
        if spent() then
            break
        end
    end
    in_chunks(taken, function(...) redis.call('ZREM', K_DROP_PREQUEUE, ...) end)
    if #ids > 0 then
        in_chunks(ids, function(...) redis.call('RPUSH', K_DROP_DRAWN, ...) end)
        created(K_LINE)
        redis.call('EXPIRE', K_DROP_DRAWN, DROP_TTL)
    end
    if redis.call('ZCARD', K_DROP_PREQUEUE) == 0 then
        drop_finish(now, seed_hex, placed)
        return placed, false
    end
    redis.call('HSET', K_DROP, 'entries', placed)
    return placed, true
end

-- The start, a slice per call (above): begun by the first call, carried on by the
-- next. Returns nil if the draw was held already (a second start does nothing); else
-- whether this call began it, how many are placed so far, and whether any are left to
-- place. Free seats are then offered (a batch: the upkeep offers the rest), if the
-- placing left some of the budget: otherwise the next call's upkeep offers them first
-- thing, so no call does a batch of offers, a slice of placing and another batch of
-- offers (at a capacity of 500, such calls took 15 to 19 ms, bench/drop_start.py).
local function drop_start(now, lease, s, nonce, starts_at, limit, budget)
    slice_spent()
    local state = redis.call('HGET', K_DROP, 'state') or ''
    if state == 'drawn' then
        return nil
    end
    local began = state ~= 'placing'
    if began then
        drop_begin(now, nonce, starts_at)
    end
    local placed, more = drop_place(now, lease, limit, budget)
    if slice_spent() < budget then
        promote(now, lease, BATCH, s)
    end
    return began, placed, more
end
