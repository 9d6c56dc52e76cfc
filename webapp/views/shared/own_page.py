"""A room's own waiting page (issue 30): its ``page_template`` rendered with the
visitor's figures under Cloudflare Waiting Room's names and ours
(``webapp/domain/page_template.py`` lists them), and the Content-Security-Policy of a
room's pages with the image origins its admin allows. No routes here: the waiting
page's poll (``place``) and the panel's preview (``admin_page``) render through it."""

from __future__ import annotations

import contextlib
import math
import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from flask import render_template, request
from markupsafe import Markup
from redis.exceptions import RedisError
from werkzeug.wrappers import Response

from webapp.domain import page_template
from webapp.domain.drops import Outlook
from webapp.domain.estimate import Estimate
from webapp.domain.rooms import RoomError
from webapp.domain.settings import RoomSettings, origins_in
from webapp.views import reports
from webapp.views.shared.words import duration, wait_words
from webapp.web.i18n import _, current_language
from webapp.web.replies import DropView
from webapp.web.security import page_policy

ORIGIN = re.compile(r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?")  # one CSP source, no more
QUARTILE = 0.6745  # a normal distribution's 25th and 75th percentiles, in its spreads


def iso(at: float | None) -> str:
    if at is None:
        return ""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def minutes_until(at: int | None, now: float) -> int:
    return 0 if at is None or at <= now else math.ceil((at - now) / 60)


def figures(
    *,
    title: str,
    position: int,
    waiting: int,
    status: str,
    guess: Estimate | None,
    poll: float,
    now: float,
    support_code: str,
    settings: RoomSettings,
    drop: DropView | None = None,
    commitment: str = "",
    next_url: str = "",
) -> dict[str, page_template.Value]:
    """Every variable of a template, from what the waiting page shows."""
    known = guess is not None and status != "paused"
    wait = guess.wait if guess is not None and known else 0.0
    spread = guess.spread if guess is not None and known else 0.0
    minutes = max(1, round(wait / 60)) if known else 0

    def within(share: float) -> int:
        return max(round((wait + share * spread) / 60), 0) if known else 0

    method = str(getattr(settings, "queueing_method", "fifo"))  # issue 30's other part
    prequeueing = drop is not None and (drop.in_prequeue or drop.phase == "prequeue")
    scheduled = drop is not None and (drop.starts_at is not None or drop.ends_at is not None)
    active = scheduled and drop is not None and drop.phase in ("prequeue", "open")
    starts = drop.starts_at if drop is not None else None
    ends = drop.ends_at if drop is not None else None
    until_start = minutes_until(starts, now) if prequeueing else 0
    until_end = minutes_until(ends, now) if active else 0
    outlook = drop.outlook if drop is not None else None
    unavailable = _("unavailable")
    return {
        "waitTimeKnown": known,
        "waitTime": minutes,
        "waitTimeHours": minutes // 60,
        "waitTimeHourMinutes": minutes % 60,
        "waitTimeFormatted": wait_words(guess) if known else unavailable,
        "waitTime25Percentile": within(-QUARTILE),
        "waitTime50Percentile": within(0.0),
        "waitTime75Percentile": within(QUARTILE),
        "queueIsFull": settings.max_line_length is not None and waiting >= settings.max_line_length,
        "queueAll": status == "paused",
        "lastUpdated": iso(now),
        "refreshIntervalSeconds": max(round(poll), 1),
        "queueingMethod": method,
        "isFIFOQueue": method == "fifo",
        "isRandomQueue": method == "random",
        "isPassthroughQueue": method == "passthrough",
        "isRejectQueue": method == "reject",
        "inWaitingRoom": True,
        "isEventActive": active,
        "isEventPrequeueing": prequeueing,
        "timeUntilEventStart": until_start,
        "timeUntilEventStartFormatted": duration(until_start * 60) if until_start else unavailable,
        "timeUntilEventEnd": until_end,
        "timeUntilEventEndFormatted": duration(until_end * 60) if until_end else unavailable,
        "eventStartTime": iso(starts),
        "eventEndTime": iso(ends),
        "shuffleAtEventStart": drop is not None and drop.prequeue_at is not None,
        "locale": current_language(),
        "position": position,
        "ahead": max(position - 1, 0),
        "lineLength": waiting,
        "stockLeft": stock_left(outlook),
        "likelySoldOut": outlook is not None and outlook.likely_sold_out,
        "drawCommitment": commitment,
        "supportCode": support_code,
        "roomTitle": title,
        "nextUrl": next_url,
    }


def stock_left(outlook: Outlook | None) -> page_template.Value:
    if outlook is None or outlook.stock_left is None:
        return ""
    return outlook.stock_left


def body(template: str, values: dict[str, page_template.Value], **context: Any) -> Markup:
    """The template rendered (cleaned) with ``values``, the page's controls
    (_controls.html, given ``context``) where it puts them; nothing if it does not."""
    controls = ""
    if page_template.names_controls(template):
        controls = render_template("_controls.html", **context)
    return Markup(
        page_template.render(template, values, controls).html
    )  # cleaned: no script survives


def room_policy(settings: RoomSettings, form_targets: str = "") -> str | None:
    """The Content-Security-Policy of the room's pages when it differs from every
    page's (None): a page template's inline styles and the admin's image origins."""
    if not settings.page_template:
        return None
    return page_policy(
        form_targets, assets=" ".join(origins_in(settings.page_asset_origins)), styled=True
    )


def room_headers(response: Response) -> Response:
    """A room's pages' policy (an after-request hook of the blueprints that show them):
    a site room's page lets its forms lead to the site (a join let in at once is
    redirected there: form-action must allow that origin only); a room with its own
    page template lets its styles and its admin's image origins in. An error's page
    (the outage's among them: Redis cannot answer for the settings) keeps every page's."""
    room = (request.view_args or {}).get("room")
    if room and response.mimetype == "text/html" and response.status_code < 500:
        with contextlib.suppress(RoomError, RedisError):
            policy = pages_policy(reports().settings(room))
            if policy:
                response.headers["Content-Security-Policy"] = policy
    return response


def pages_policy(settings: RoomSettings) -> str | None:
    """The policy of a room's pages, if not every page's (``room_headers``; the waiting
    page's lean poll sets it too)."""
    parts = urlsplit(settings.site_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    site = origin if parts.netloc and ORIGIN.fullmatch(origin) else ""
    return room_policy(settings, site) or (page_policy(site) if site else None)
