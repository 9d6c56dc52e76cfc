"""A waitlist's order, as published rules in plain Python: the score of an entry in
priority order, and the lottery's draw (its commitment, each entry's rank, and the
order anyone can recompute from the revealed seed). ``waitlist_lib.lua`` computes the
same scores; ``webapp.domain.waitlist`` ranks a draw's participants with these. Also a
live room's seat draws under random order (``room_lib.lua`` offer_drawn): the index
into the line each audited draw recomputes to. Pure functions: no Redis, no Flask."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import NamedTuple

TWO32 = 2**32
DRAWN = TWO32  # a drawn entry's score: DRAWN + its rank (52 bits)
MAX_POINTS = 1_000_000  # referral_cap's upper bound: below 2**21, so scores stay exact


def priority_score(points: int, seq: int) -> int:
    """The sorted-set score of an entry in priority order: more points first, then the
    earlier join. With 0 <= points <= MAX_POINTS < 2**21 and 1 <= seq < 2**32, its size
    stays below 2**53, so a double holds it exactly: scores never round, and two
    entries never tie (seq is unique). waitlist_lib.lua computes the same."""
    return seq - points * TWO32


def draw_rank(seed: bytes, entry: str) -> int:
    """An entry's lottery rank: the first 52 bits of HMAC-SHA256(seed, entry id), as a
    big-endian integer (exact in a sorted-set score). Lower goes first."""
    digest = hmac.new(seed, entry.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 12


def draw_score(seed: bytes, entry: str) -> int:
    return DRAWN + draw_rank(seed, entry)


def commitment_of(seed_hex: str) -> str:
    """What is published before the draw: the SHA-256 of the seed's bytes, hex."""
    return hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest()


def verify_draw(seed_hex: str, entry_ids: Iterable[str]) -> list[str]:
    """The draw's order, recomputed from the revealed seed and the participants: by rank,
    ties (about one draw in ten thousand, at a million entries) by entry id, bytewise,
    as Redis orders equal scores. Check ``commitment_of(seed_hex)`` too."""
    seed = bytes.fromhex(seed_hex)
    return sorted(entry_ids, key=lambda entry: (draw_rank(seed, entry), entry.encode()))


class SeatDraw(NamedTuple):
    """One free seat drawn under random order, as its audit entry (kind ``admit``)
    records it in its detail, ``draw <seed> <size> <pick>``: the seed (hex), how many
    were in line (``size``) and ``pick``, the index into the line (in join order from
    the head, 0 first) of the ticket drawn (the entry's code names it)."""

    seed: str
    size: int
    pick: int  # the index drawn

    @classmethod
    def parse(cls, detail: str) -> SeatDraw | None:
        """The draw an ``admit`` entry's detail records; None for an admission not drawn."""
        parts = detail.split(" ")
        if len(parts) != 4 or parts[0] != "draw":
            return None
        try:
            size, pick = int(parts[2]), int(parts[3])
            bytes.fromhex(parts[1])
        except ValueError:
            return None
        return cls(parts[1], size, pick) if size > 0 else None

    def verify(self) -> bool:
        """Whether the index drawn is the one its seed and the line's size give."""
        return seat_draw_index(self.seed, self.size) == self.pick


def seat_draw_index(seed: str, size: int) -> int:
    """The index into a line of ``size`` that the seed ``seed`` (hex text) draws: the
    first 48 bits of SHA-1("<seed>:<size>"), big-endian, modulo ``size`` (room_lib.lua
    computes the same with Redis's own SHA-1). The modulo's bias is below size / 2**48:
    none that matters. SHA-1 only spreads the seed over the line (no secret rests on
    it)."""
    digest = hashlib.sha1(f"{seed}:{size}".encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[:6], "big") % size
