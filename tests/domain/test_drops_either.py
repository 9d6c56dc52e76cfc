"""A scheduled drop on Redis and on Redis Cluster: every drop script's keys share the
room's hash tag, and the reads (pre-queue count, stock) are pipelines within one slot."""

from __future__ import annotations

from typing import Any

import pytest

from webapp.domain.draw import verify_draw
from webapp.domain.tickets import public_id

T0 = 1_700_000_000


@pytest.fixture
def client(db: Any) -> Any:
    """The domain's services (tests/domain/conftest.py) on each."""
    return db


def test_a_drop_on_either(visits: Any, clock: Any) -> None:
    """Commit, pre-queue, start, stock and sell-out, as on one Redis."""
    visits.configure("drop", {"capacity": 1, "prequeue_at": T0 - 1, "starts_at": T0 + 60,
                              "stock": 5})  # fmt: skip
    tokens = [visits.join("drop", identity=f"v{i}").ticket.token for i in range(6)]
    assert visits.drops.prequeued("drop") == 6
    assert visits.start_drop("drop") == 6
    record = visits.drops.draw("drop")
    assert visits.drops.drawn_ids("drop") == verify_draw(record.seed, map(public_id, tokens))
    assert visits.record_sold("drop", 5, request_id="r").left == 0
    assert visits.drops.stock("drop")[:2] == (0, 5)
    assert visits.drops.prequeued("drop") == 0
