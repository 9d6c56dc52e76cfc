"""How many emails one mailbox may be sent (issue 25): at most ``MAIL_MOST`` an hour,
whatever room or form asks for them, so knowing an address cannot flood it. Counted in
Redis (fixed hourly windows, one counter a mailbox) across processes and hosts. No Flask.

A sign-up first asks whether the mailbox has room left (``check``; if not it is refused
with a message, changing nothing), and counts the email only once its script says it
queued one (``spent``): two sign-ups at the same instant may pass one over the bound.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from webapp.domain.emails import EmailRefused
from webapp.redis.keys import Keys

MAIL_MOST = 3  # emails to one mailbox per window, at most
MAIL_WINDOW = 3600  # seconds


class MailBudget:
    def __init__(
        self,
        client: Any,
        keys: Keys,
        clock: Callable[[], float],
        most: int = MAIL_MOST,
        window: int = MAIL_WINDOW,
    ) -> None:
        self.client, self.keys, self.clock = client, keys, clock
        self.most, self.window = most, window

    def _key(self, mailbox: str) -> str:
        digest = hashlib.sha256(mailbox.encode()).hexdigest()[:32]
        return self.keys.mail_budget(digest, int(self.clock() // self.window))

    def check(self, mailbox: str) -> None:
        """EmailRefused ("busy") if the mailbox had its emails for this hour."""
        sent = self.client.get(self._key(mailbox))
        if sent is not None and int(sent) >= self.most:
            raise EmailRefused(
                "busy",
                "this address has been sent enough emails for now; please try again in an hour",
            )

    def spent(self, mailbox: str) -> None:
        """One email was queued for the mailbox."""
        key = self._key(mailbox)
        with self.client.pipeline(transaction=False) as pipe:
            pipe.incr(key)
            pipe.expire(key, self.window)
            pipe.execute()
