"""Visits as the one home of every change of who is where and of the rooms themselves:
each change runs its script, tells the room's open pages once, and keeps the chat and
the caches in step (the socket's presence and chat membership included)."""

from __future__ import annotations

import logging

import pytest

from webapp.domain.announcer import deleted_frame, ended_frame
from webapp.domain.chat import room_chat_id
from webapp.domain.rooms import TicketGone, public_id


def test_a_join_to_the_line_tells_the_room(rooms, visits, told):
    """Whether the joiner is seated or waits, the room's pages hear of it."""
    rooms.configure("hall", {"capacity": 1})
    visits.join("hall", name="Ann")
    visits.join("hall", name="Bo")
    assert told.changed_rooms == ["hall", "hall"]


def test_a_socket_opens_into_the_chat_without_a_second_announcement(rooms, visits, chats, told):
    """The seated visitor's socket opens: presence on, into the room's chat; the room
    was told of the admission at the join, and is not told again."""
    rooms.configure("hall", {"capacity": 1})
    ann = visits.join("hall", name="Ann").ticket
    opened = visits.open("hall", ann.token, hold=20)
    assert opened.ticket.state == "admitted"
    assert public_id(ann.token) in chats.members(room_chat_id("hall"))
    assert told.changed_rooms == ["hall"]
    visits.close("hall", ann.token)  # the seat is held for grace: the room hears of it
    assert told.changed_rooms == ["hall", "hall"]
    assert public_id(ann.token) in chats.members(room_chat_id("hall"))


def test_upkeep_seen_in_a_check_in_tells_the_room(rooms, visits, told, clock):
    """A check-in whose script dropped someone overdue from the line tells the room: no
    other call would, since the sweep then finds nothing left to do."""
    rooms.configure("hall", {"capacity": 1, "dropout_seconds": 30})
    rooms.join("hall")
    gone, stays = rooms.join("hall"), rooms.join("hall")
    visits.check_in("hall", stays.token)  # the room as this process first sees it
    assert told.changed_rooms == []
    clock.advance(20)
    visits.check_in("hall", stays.token)
    assert told.changed_rooms == []  # nothing changed
    clock.advance(20)  # `gone` is overdue now; `stays` checked in 20 s ago
    assert visits.check_in("hall", stays.token).ticket.waiting == 1
    assert told.changed_rooms == ["hall"]
    with pytest.raises(TicketGone):
        rooms.check_in("hall", gone.token)


def test_an_end_closes_the_holders_sockets_and_tells_the_room(rooms, visits, told):
    """A visitor leaves (or is removed): their own sockets are told why, the room's
    figures are resent."""
    rooms.configure("hall", {"capacity": 1})
    ann = visits.join("hall").ticket
    told.changed_rooms.clear()
    visits.end("hall", ann.token)
    assert told.frames == [("hall", ended_frame(ann.token, "left"))]
    assert told.changed_rooms == ["hall"]


def test_a_deleted_room_is_logged_its_chat_emptied_and_its_pages_told(
    rooms, visits, chats, told, caplog
):
    """The room's audit log goes with it, so the deletion is logged; its chat ends and
    its open pages are told to close."""
    rooms.configure("hall", {"capacity": 2})
    ann = visits.join("hall").ticket
    visits.open("hall", ann.token, hold=20)
    with caplog.at_level(logging.INFO, logger="webapp.domain.visits"):
        assert visits.delete("hall", who="ada")
    assert "room hall deleted by ada" in caplog.text
    assert chats.members(room_chat_id("hall")) == {}
    assert told.frames[-1] == ("hall", deleted_frame())
    assert rooms.find_settings("hall") is None
    assert not visits.delete("hall", who="ada")  # nothing left: nothing said
    assert told.frames[-1] == ("hall", deleted_frame()) and len(told.frames) == 1
