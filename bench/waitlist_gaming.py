"""The waitlist's defences against gaming, case by case, on a private redis-server:
how many referral boosts were credited, held for review, voided or refused (never
recorded), and the points the referrer ended with. Each case is its own room with the
default settings (boost 100, cap 500, velocity 10 an hour, 3 entries per address)
unless it says otherwise. Prints a table; the assertions are in
tests/domain/test_waitlist.py.

    .venv/bin/python bench/waitlist_gaming.py
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from servers import run_bounded, start_redis

from webapp.domain.reports import Reports
from webapp.domain.rooms import WaitingRooms
from webapp.domain.waitlist import Entry, Waitlists
from webapp.redis.keys import Keys
from webapp.redis.scripts import Scripts


def own(i: int) -> str:
    return f"198.51.{i}.7"  # a network of the referee's own


# Cases of referees joining with the referrer's code: (what was tried, how many, the
# address of the i-th, its device id, whether it confirms, seconds between joins)
FRIENDS: dict[str, tuple[str, int, Callable[[int], str], str, bool, float]] = {
    "honest": ("5 friends, each from their own network", 5, own, "", True, 0),
    "cap": ("8 friends (8 x 100 points against the cap of 500)", 8, own, "", True, 0),
    "velocity": ("15 friends within one hour (velocity 10)", 15, own, "", True, 60),
    "network": ("4 referees from the referrer's own /24", 4, lambda i: f"192.0.2.{20 + i}",
                "", True, 0),
    "device": ("4 referees on the referrer's device", 4, own, "phone-a", True, 0),
    "address": ("6 referees from one address (3 entries per address)", 6,
                lambda i: "203.0.113.9", "", True, 0),
    "unconfirmed": ("6 referees who never confirm their email", 6, own, "", False, 0),
}  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def case(waitlists: Waitlists, room: str, clock: Clock, kind: str) -> tuple[str, Entry, int]:
    """Plays one gaming case in ``room``; returns (what was tried, the referrer's entry,
    referral attempts that were refused outright)."""
    a = waitlists.join(room, "A", "alice@gmail.com", address="192.0.2.10", device="phone-a")
    waitlists.confirm(room, a.id)
    code = a.referral_code

    def friend(i: int, address: str, device: str = "", confirm: bool = True) -> Entry:
        x = waitlists.join(room, f"F{i}", f"f{i}@example.org", code, address, device)
        return waitlists.confirm(room, x.id) if confirm else x

    refused = 0
    if kind in FRIENDS:
        tried, n, where, device, confirm, gap = FRIENDS[kind]
        for i in range(n):
            friend(i, where(i), device, confirm)
            clock.now += gap
    elif kind == "self":
        tried = "the referrer's own code, by aliases of its own mailbox (3 tries)"
        for alias in ("alice@gmail.com", "a.l.i.c.e+x@gmail.com", "Alice@googlemail.com"):
            again = waitlists.join(room, "A", alias, code, "198.51.0.7")
            refused += again.id == a.id and again.referrals == a.referrals
    else:  # loop
        tried = "a loop: B (from A) refers C, then A, unconfirmed, rejoins with C's code"
        a = waitlists.join(room, "A", "ann@example.org", address="192.0.2.10")  # unconfirmed
        b = waitlists.join(room, "B", "b@example.org", a.referral_code, "198.51.1.7")
        waitlists.confirm(room, b.id)
        c = waitlists.join(room, "C", "c@example.org", b.referral_code, "198.51.2.7")
        waitlists.confirm(room, c.id)
        waitlists.join(room, "A", "ann@example.org", c.referral_code, "192.0.2.10")
        waitlists.confirm(room, a.id)  # A's leg to C closes the loop: void (C's row below)
        return tried, waitlists.position(room, c.id), refused
    return tried, waitlists.position(room, a.id), refused


def main() -> int:
    kinds = ["honest", "cap", "velocity", "network", "device", "address", "unconfirmed",
             "self", "loop"]  # fmt: skip

    def work(stack: contextlib.ExitStack) -> None:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wl-gaming-")))
        port, _pid = start_redis(stack, workdir)
        client = redis.Redis(port=port, decode_responses=True)
        stack.callback(client.close)
        clock = Clock()
        rooms = WaitingRooms(client, Keys("gaming"), Scripts(client), clock=clock)
        waitlists = Waitlists(rooms, secret=b"gaming")
        print(f"{'case':<12} {'credited':>8} {'held':>5} {'void':>5} {'refused':>7} "
              f"{'pending':>7} {'points':>6}  what was tried")  # fmt: skip
        for kind in kinds:
            room = f"g-{kind}"
            rooms.configure(room, {"kind": "waitlist", "ordering": "priority"})
            tried, referrer, refused = case(waitlists, room, clock, kind)
            void = _voids(rooms, room)
            r = referrer.referrals
            print(f"{kind:<12} {r.credited:>8} {r.held:>5} {void:>5} {refused:>7} "
                  f"{r.pending:>7} {referrer.score:>6}  {tried}")  # fmt: skip

    return run_bounded(120, work)


def _voids(rooms: WaitingRooms, room: str) -> int:
    return len(Reports(rooms).audit(room, 1000, ["referral_void"]))


if __name__ == "__main__":
    sys.exit(main())
