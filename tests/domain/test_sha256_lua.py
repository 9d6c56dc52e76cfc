"""sha256_lib.lua (Redis Lua has SHA-1 alone) against Python's hashlib and hmac, and
its draw rank against webapp.domain.draw.draw_rank, over many inputs: every length
around the block and padding boundaries, random bytes, long keys."""

from __future__ import annotations

import hashlib
import hmac
import random
from typing import Any

from webapp.domain.draw import draw_rank, verify_draw
from webapp.redis.scripts import source

BODY = """
local out = {}
for i = 1, #ARGV, 2 do
    local key, msg = ARGV[i], ARGV[i + 1]
    out[#out + 1] = sha256_hex(msg)
    out[#out + 1] = bytes_hex(sha256(msg))
    out[#out + 1] = hmac_sha256_hex(key, msg)
    out[#out + 1] = string.format('%.0f', draw_rank_of(hmac_sha256_key(key), msg))
end
return out
"""


def run(r: Any, pairs: list[tuple[bytes, bytes]]) -> list[str]:
    args = [part for pair in pairs for part in pair]
    return [str(v) for v in r.eval(source("sha256_lib") + BODY, 0, *args)]


def test_sha256_and_hmac_agree_with_python(r: Any) -> None:
    """Every message length from 0 to 300 bytes (so every padding case), random bytes,
    keys from empty to longer than a block."""
    rng = random.Random(24)
    pairs = [(rng.randbytes(n % 150), rng.randbytes(n)) for n in range(301)]
    out = run(r, pairs)
    for i, (key, msg) in enumerate(pairs):
        hexed, raw, mac, _ = out[4 * i : 4 * i + 4]
        assert hexed == hashlib.sha256(msg).hexdigest(), len(msg)
        assert raw == hexed
        assert mac == hmac.new(key, msg, hashlib.sha256).hexdigest(), (len(key), len(msg))


def test_long_messages(r: Any) -> None:
    """Messages of many blocks (up to 10 KB)."""
    rng = random.Random(7)
    pairs = [(b"k", rng.randbytes(n)) for n in (1000, 4095, 4096, 4097, 10_000)]
    out = run(r, pairs)
    for i, (_, msg) in enumerate(pairs):
        assert out[4 * i] == hashlib.sha256(msg).hexdigest()


def test_draw_rank_agrees_with_python(r: Any) -> None:
    """The rank of 2,000 draw ids (12 hex digits, as public ids are) under one 32-byte
    seed, and text ids of other shapes: exactly draw_rank's 52 bits."""
    rng = random.Random(52)
    seed = rng.randbytes(32)
    ids = [rng.randbytes(6).hex() for _ in range(2000)]
    ids += ["", "a", "ticket-" + "x" * 70, "é ünïcode"]
    out = run(r, [(seed, i.encode()) for i in ids])
    ranks = {i: int(out[4 * n + 3]) for n, i in enumerate(ids)}
    assert all(ranks[i] == draw_rank(seed, i) for i in ids)
    ordered = sorted(ids, key=lambda i: (ranks[i], i.encode()))
    assert ordered == verify_draw(seed.hex(), ids)
