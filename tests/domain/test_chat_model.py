"""The chat against a plain-Python model, over random sequences of operations."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from webapp.domain.chat import Chats, NotMember
from webapp.redis.scripts import Scripts

CHAT = "g"
PEOPLE = st.sampled_from(["ann", "bob", "cy"])
CAP, KEEP = 6, 2


class Model:
    """What the chat should do, without Redis."""

    def __init__(self) -> None:
        self.members: dict[str, int] = {}
        self.messages: dict[int, str] = {}
        self.latest = 0

    def cleanup(self) -> None:
        cutoff = min(min(self.members.values()), self.latest - KEEP)
        self.messages = {i: t for i, t in self.messages.items() if i > cutoff}

    def join(self, who: str, history: int) -> tuple[list[int], int]:
        if who not in self.members:
            self.members[who] = self.latest
        seen = self.members[who]
        older = sorted(i for i in self.messages if i <= seen)
        return (older[-history:] if history else []), seen

    def leave(self, who: str) -> int:
        if self.members.pop(who, None) is not None:
            if not self.members:
                self.messages, self.latest = {}, 0
            else:
                self.cleanup()
        return len(self.members)

    def send(self, who: str, text: str) -> int:
        if who not in self.members:
            raise NotMember(who)
        self.latest += 1
        self.messages[self.latest] = text
        for i in sorted(self.messages)[:-CAP]:
            del self.messages[i]
        return self.latest

    def fetch(self, who: str) -> tuple[list[int], int]:
        if who not in self.members:
            raise NotMember(who)
        seen = self.members[who]
        if self.latest <= seen:
            return [], 0
        got = sorted(i for i in self.messages if i > seen)
        missed = (got[0] if got else self.latest + 1) - seen - 1
        self.members[who] = self.latest
        self.cleanup()
        return got, missed


def test_chat_matches_the_model(r, keys, clock):
    """Random joins, leaves, sends and fetches do what the model says."""

    class ChatMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            r.flushall()
            self.chats = Chats(
                r, keys, Scripts(r), history_cap=CAP, keep_recent=KEEP, rate_limit=10**6
            )
            self.model = Model()

        @rule(who=PEOPLE, history=st.integers(0, 4))
        def join(self, who: str, history: int) -> None:
            joined = self.chats.join(CHAT, who, clock.now, history=history)
            want_history, want_seen = self.model.join(who, history)
            assert [m.id for m in joined.history] == want_history
            assert joined.seen_id == want_seen

        @rule(who=PEOPLE)
        def leave(self, who: str) -> None:
            assert self.chats.leave(CHAT, who) == self.model.leave(who)

        @rule(who=PEOPLE, text=st.text(min_size=1, max_size=5).filter(str.strip))
        def send(self, who: str, text: str) -> None:
            try:
                want = self.model.send(who, text.strip())
            except NotMember:
                try:
                    self.chats.send(CHAT, who, who, text, clock.now)
                except NotMember:
                    return
                raise AssertionError("a non-member could send") from None
            sent = self.chats.send(CHAT, who, who, text, clock.now)
            assert sent.id == want

        @rule(who=PEOPLE)
        def fetch(self, who: str) -> None:
            try:
                want, missed = self.model.fetch(who)
            except NotMember:
                try:
                    self.chats.fetch(CHAT, who)
                except NotMember:
                    return
                raise AssertionError("a non-member could fetch") from None
            got = self.chats.fetch(CHAT, who)
            assert [m.id for m in got] == want
            assert got.missed == missed

        @rule()
        def everyone_fetches(self) -> None:
            for who in list(self.model.members):
                self.fetch(who)

        @invariant()
        def same_state(self) -> None:
            assert self.chats.members(CHAT) == self.model.members
            assert self.chats.latest_id(CHAT) == self.model.latest
            stored = r.zrange(keys.chat(CHAT).messages, 0, -1, withscores=True)
            assert [int(s) for _m, s in stored] == sorted(self.model.messages)
            for who in ["ann", "bob", "cy"]:
                seen = self.model.members.get(who)
                assert self.chats.chats_of(who) == ({} if seen is None else {CHAT: seen})

    run_state_machine_as_test(
        ChatMachine,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        ),
    )
