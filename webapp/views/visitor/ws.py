"""The room websocket, ``/rooms/<room>/ws``: the open socket is the visitor's presence.

On connect the seat's presence opens and its holder joins the room's chat
(``Visits.open``), every ``WS_BEAT_SECONDS`` it beats (holding the seat for grace + one
beat, so a socket that dies silently still loses it in time), and on disconnect it
closes, which holds the seat for ``grace_seconds`` (``Visits.close``). When the ticket
ends elsewhere (the visitor left in another tab, an admin removed them) or the room is
deleted, ``Visits`` says so to the room and the socket sends its page a ``gone`` frame
with the reason, and closes, at once.

Frames are JSON objects with a ``type`` (``webapp.views.visitor.frames``). Incoming frames go to
the handler registered for their type (``@frames.on("send")``); outgoing ones come from
this module and the room relay (``webapp.live.realtime.RoomRelay``): any process may
publish a frame for every socket of the room with ``relay.publish(room, frame)``, and
``relay.changed(room)`` makes every process send its sockets of the room one fresh ``room.state``.

Redis may fail at any moment (restart, outage, freeze). A socket that is open stays
open through it: a failed beat is tried again every second, a failed frame is answered
with an error frame that says to try again, and the seat is kept meanwhile (the room
scripts skip an outage on every deadline: ``room_lib.lua``). A socket that cannot start
closes with 1013 (try again later) and the page reconnects; anything unexpected closes
with 1011. Nothing but websocket frames is ever written on the socket.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import threading
import time
from typing import Any

from flask import Blueprint, abort, current_app, request, session, url_for
from flask_babel import format_number
from flask_sock import Sock
from redis.exceptions import RedisError
from simple_websocket import ConnectionClosed

from webapp.domain.chat import (
    MAX_TEXT,
    ChatError,
    InvalidMessage,
    NotMember,
    RateLimited,
    room_chat_id,
)
from webapp.domain.refusals import GONE_REASONS
from webapp.domain.rooms import RoomError, RoomNotFound, TicketGone
from webapp.live.chat_relay import ChatRelay
from webapp.views import reports, services, visits
from webapp.views.shared.place import CLOSE_TOO_MANY, CLOSE_TRY_AGAIN
from webapp.views.visitor.frame_budget import FrameBudget, refusal
from webapp.views.visitor.frames import Connection, Frames, close, unavailable
from webapp.web.i18n import _, gone_reason
from webapp.web.security import same_origin

log = logging.getLogger(__name__)
bp = Blueprint("ws", __name__)
sock = Sock()
MAX_REF = 40  # characters of a send's ref echoed back
CLOSE_ERROR = 1011  # close code: the server failed unexpectedly
BEAT_RETRY = 1.0  # seconds before a failed beat is tried again
RELEASE_PATIENCE = 300.0  # seconds a seat's release is retried while Redis is away


def chat_words(error: ChatError) -> str:
    """A chat refusal in the visitor's language (the page capitalises it)."""
    if isinstance(error, RateLimited):
        return _(
            "you are sending too fast: at most %(count)s messages every %(seconds)s seconds;"
            " try again in %(wait)s s",
            count=error.limit,
            seconds=f"{error.window:g}",
            wait=math.ceil(error.retry_after),
        )
    if isinstance(error, NotMember):
        return _("you are not in this chat")
    if isinstance(error, InvalidMessage):
        if "empty" in str(error):
            return _("an empty message cannot be sent")
        if "at most" in str(error):
            return _("a message can be at most %(count)s characters", count=format_number(MAX_TEXT))
        return _("a message must be text")
    return str(error)


frames = Frames()


@frames.on("ping")
def ping(conn: Connection, frame: dict[str, Any]) -> None:
    """The client's own liveness check (the server's are websocket pings)."""
    conn.send({"type": "pong", "at": frame.get("at")})


def init_app(app: Any) -> None:
    app.register_blueprint(bp)
    sock.init_app(app)


def chat_relay() -> ChatRelay:
    return services().chat_relay


@frames.on("send")
def send_message(conn: Connection, frame: dict[str, Any]) -> None:
    """A chat message from this socket's visitor. A refusal comes back as an error frame
    with the reason and the send's ``ref`` (if it carried a short one), so the page knows
    which text was refused."""
    if conn.chat is None:
        return
    refusal: dict[str, Any] = {"type": "error", "for": "send"}
    ref = frame.get("ref")
    if isinstance(ref, int | str) and not isinstance(ref, bool) and len(str(ref)) <= MAX_REF:
        refusal["ref"] = ref
    try:
        chat_relay().send(conn.chat, conn.name or "Guest", frame.get("text"))
    except RateLimited as error:
        wait = math.ceil(error.retry_after)
        conn.send({**refusal, "error": chat_words(error), "retry_after": wait})
    except ChatError as error:
        conn.send({**refusal, "error": chat_words(error)})
    except RedisError as error:  # not stored: the page puts the text back to send again
        log.warning("chat send in %s: Redis failed: %s", conn.room, error)
        conn.send({**refusal, "error": unavailable(), "retry": True})


@bp.before_request
def check_handshake() -> None:
    """Refuses the handshake before it happens: a foreign page, or no ticket here."""
    allowed = current_app.config["WS_ALLOWED_ORIGINS"]
    if not same_origin(request.headers.get("Origin"), request.scheme, request.host, allowed):
        abort(403, "this page may not open a socket here")
    room = (request.view_args or {}).get("room", "")
    if room not in session.get("tickets", {}):
        abort(403, "join the room first")


@sock.route("/rooms/<room>/ws", bp=bp)  # type: ignore[untyped-decorator]
def room_socket(ws: Any, room: str) -> None:
    """Serves the socket; whatever fails, it ends with a close frame, never HTTP."""
    try:
        limited_room(ws, room)
    except ConnectionClosed:
        pass
    except RedisError as error:
        log.warning("room socket in %s closed: Redis failed: %s", room, error)
        close(ws, CLOSE_TRY_AGAIN, "briefly unavailable; reconnecting")
    except Exception:
        log.exception("room socket in %s failed", room)
        close(ws, CLOSE_ERROR, "something went wrong; reconnecting")


def limited_room(ws: Any, room: str) -> None:
    limits = services().socket_limits
    visitor = str(session.get("vid", ""))
    clock = services().clock
    if not limits.acquire(visitor, clock()):
        reason = _(
            "too many open connections: at most %(count)s at once; close another tab and try again",
            count=limits.max_per_user,
        )
        close(ws, CLOSE_TOO_MANY, reason)
        return
    try:
        serve_room(ws, room, current_app.config)
    finally:
        try:
            limits.release(visitor, clock())
        except RedisError:  # this server's count is right; Redis's copy lapses by itself
            log.warning("connection count of a visitor not released; it lapses within the TTL")


def serve_room(ws: Any, room: str, config: Any) -> None:
    relay = services().relay
    conn = Connection(ws, room, session["tickets"][room], session.get("name", ""))
    conn.farewells = farewells(room)
    beat = float(config["WS_BEAT_SECONDS"])
    try:
        hold = reports().settings(room).grace_seconds + beat
        opened = visits().open(room, conn.token, hold)
    except RoomError as error:
        conn.send(gone_frame(room, error))
        return
    relay.attach(conn)
    try:
        conn.send(relay.fresh_state(room))  # with this socket's seat in it
        after = request.args.get("after", type=int)
        conn.chat = chat_relay().attach(conn, room_chat_id(room), conn.id, opened.chat, after)
        serve(ws, conn, beat, hold, float(config["WS_REFRESH_SECONDS"]))
    finally:
        relay.detach(conn)
        conn.open = False
        if conn.chat is not None:
            with contextlib.suppress(RedisError):  # the seen id moves on with the next ack
                chat_relay().detach(conn.chat)
        release_seat(room, conn.token, hold)


def release_seat(room: str, token: str, hold: float) -> None:
    """The socket closed: the seat is held for grace from now. If Redis is away, that is
    tried again in the background until it lands (or the seat's own hold has long run
    out and the sweep has freed it): a seat is never left "open" by a lost close."""
    home = visits()  # this thread may outlive the request: its retries need no context

    def attempt() -> bool:
        try:
            home.close(room, token)
        except RoomError:
            pass  # the seat already ended (left, removed, lapsed): nothing to hold
        except RedisError:
            return False
        return True

    if attempt():
        return

    def retry() -> None:
        deadline = time.monotonic() + hold + RELEASE_PATIENCE
        while time.monotonic() < deadline:
            time.sleep(BEAT_RETRY)  # as often as a beat: the seat is freed in time
            if attempt():
                return
        log.warning("could not release a seat in %s; its hold lapses instead", room)

    threading.Thread(target=retry, name="release-seat", daemon=True).start()


def serve(ws: Any, conn: Connection, beat: float, hold: float, refresh: float) -> None:
    """Reads frames and renews the seat until the socket closes or the seat ends."""
    # The first beat and refresh at a random point of their interval (earlier is never
    # late): sockets opened together, as at a room's opening or after a restart, would
    # otherwise beat together forever, a burst of presence calls every `beat` seconds
    # that the line's check-ins queue behind.
    next_beat = time.monotonic() + beat * random.uniform(0.2, 1.0)
    next_refresh = time.monotonic() + refresh * random.uniform(0.2, 1.0)
    config = current_app.config
    budget = FrameBudget(config["WS_FRAME_RATE"], config["WS_FRAME_BURST"], time.monotonic())
    while conn.open:
        raw = ws.receive(timeout=max(next_beat - time.monotonic(), 0.0))
        if raw is not None:
            refused = refusal(budget, raw, config["WS_MAX_FRAME_BYTES"], time.monotonic())
            if refused is not None:
                conn.send({"type": "error", "error": refused.reason, "closing": refused.code})
                conn.open = False
                close(ws, refused.code, refused.reason)
                return
            frames.dispatch(conn, raw)
        now = time.monotonic()
        if now < next_beat:
            continue
        next_beat = now + beat
        try:
            visits().beat(conn.room, conn.token, hold)
            if now >= next_refresh:  # the sweeper admits and expires without telling us
                next_refresh = now + refresh
                # One read serves this process's sockets of the room: each socket's
                # own read of a thousand seats was most of a worker's CPU at 1,000.
                conn.send(services().relay.recent_state(conn.room, refresh / 2))
        except RoomError as error:
            conn.send(gone_frame(conn.room, error))
            return
        except RedisError as error:  # the seat is held grace + beat, and outages are skipped
            log.warning("presence beat in %s failed (%s); trying again", conn.room, error)
            next_beat = now + min(BEAT_RETRY, beat)


def farewells(room: str) -> dict[str, dict[str, Any]]:
    """The gone frames a socket of ``room`` may need, by why its seat ended ("deleted":
    the room was; "": anything else), in the visitor's language."""
    reasons = {why: TicketGone(why) for why in GONE_REASONS}
    frames = {why: gone_frame(room, error) for why, error in reasons.items()}
    frames["deleted"] = gone_frame(room, RoomNotFound(room))
    frames[""] = gone_frame(room, RoomError(room))
    return frames


def gone_frame(room: str, error: RoomError) -> dict[str, Any]:
    """``message``: why the seat ended, in the visitor's words, mid-sentence (the page
    writes "Your seat has ended: <message>.")."""
    if isinstance(error, TicketGone):
        why = gone_reason(error.why)
    elif isinstance(error, RoomNotFound):
        why = _("the room was closed for good")
    else:
        why = _("this seat is no longer valid")
    return {
        "type": "gone",
        "message": why,
        "rejoin": url_for("pages.room_page", room=room),
        "lobby": url_for("pages.home"),
    }
