"""A first check that the engine admits up to capacity and lines up the rest."""

from webapp.domain.rooms import WaitingRooms


def test_capacity_then_line(r, keys, clock):
    """The first N joiners are admitted; the next ones wait in order."""
    rooms = WaitingRooms(r, keys, clock=clock)
    rooms.configure("lobby", {"capacity": 2})
    tickets = [rooms.join("lobby") for _ in range(4)]
    assert [t.state for t in tickets] == ["admitted", "admitted", "waiting", "waiting"]
    assert [t.position for t in tickets] == [0, 0, 1, 2]
