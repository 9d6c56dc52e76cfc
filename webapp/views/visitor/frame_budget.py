"""What one room socket may send (issue 25): a budget of frames, and a size.

Every frame a page sends (its pings and invalid frames too) takes a token from a bucket
of ``WS_FRAME_BURST`` (40) refilled at ``WS_FRAME_RATE`` a second (20): a page never
comes near it (a chat message, a ping every few seconds), a flood does at once. Beyond
it the socket is sent an error frame, then closed with 1008 (policy violation), so one
visitor's flood costs the room's other check-ins nothing further.

A frame over ``WS_MAX_FRAME_BYTES`` (16 KiB) is closed with 1009 (too big). The
websocket library reads frames up to ``SOCK_SERVER_OPTIONS['max_message_size']`` (1 MiB)
whole, so the close frame reaches a client that is still sending: a library that stops
reading mid-frame and closes leaves data unread, and the kernel answers with a TCP reset
instead of the close frame.
"""

from __future__ import annotations

from typing import NamedTuple

CLOSE_POLICY = 1008  # close code: the frame budget is spent
CLOSE_TOO_BIG = 1009  # close code: a frame over WS_MAX_FRAME_BYTES


class FrameBudget:
    """A token bucket of frames; time is passed in (monotonic seconds)."""

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst = rate, burst
        self.tokens, self.at = burst, now

    def take(self, now: float) -> bool:
        """One frame arrived: False if the budget is spent."""
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Refusal(NamedTuple):
    code: int
    reason: str


def refusal(budget: FrameBudget, raw: str | bytes, most_bytes: int, now: float) -> Refusal | None:
    """Why this frame closes the socket (None: it may be handled)."""
    size = len(raw.encode()) if isinstance(raw, str) else len(raw)
    if size > most_bytes:
        return Refusal(CLOSE_TOO_BIG, f"a frame can be at most {most_bytes} bytes")
    if not budget.take(now):
        return Refusal(CLOSE_POLICY, "too many frames; slow down and reconnect")
    return None
