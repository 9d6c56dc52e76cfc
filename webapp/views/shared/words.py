"""The words shown to people, in their language: the engine's refusals (errors, forms,
the room socket; the JSON API keeps the engine's own English, ``str(error)``), the wait
as a range, why it moved, a duration, what became of a confirmation email asked for
again."""

from __future__ import annotations

import math

from babel.dates import format_timedelta
from babel.numbers import format_percent

from webapp.domain import rooms as engine
from webapp.domain import waitlist
from webapp.domain.estimate import WIDER, Estimate, SeatChance
from webapp.domain.rooms import MAX_DISPLAY_NAME
from webapp.web.i18n import _, gone_reason, ngettext, page_locale


def explain(error: engine.RoomError) -> str:
    """A refusal of the engine in the visitor's words and language: what happened and why
    (the page adds what to do next). The JSON API keeps the engine's English."""
    english = str(error)
    if isinstance(error, engine.TicketGone):
        return _("Your place has ended: %(reason)s.", reason=gone_reason(error.why))
    if isinstance(error, waitlist.EntryNotFound):
        return _("This link does not open an entry of this waitlist: it may be incomplete.")
    if isinstance(error, engine.RoomNotFound):
        return _(
            "There is no room at this address: it may have been deleted, or the link is mistyped."
        )
    if isinstance(error, engine.TicketNotFound):
        return _("We could not find your place in this room: it may have ended a while ago.")
    if isinstance(error, engine.RoomClosed):
        if "waitlist" in english:
            return _("This room is a waitlist: sign up to it with your email on its page.")
        return _("This room is closed to new visitors for now.")
    if isinstance(error, engine.QueueRejecting):
        return _(
            "This room is not taking new visitors right now. People already waiting keep "
            "their places."
        )
    if isinstance(error, engine.JoinRefused):
        if "full" in english:
            return _("The line is full right now.")
        return _("The wait is too long right now.")
    if isinstance(error, engine.NotSeated):
        return _("You do not hold a seat in this room (any more).")
    if isinstance(error, engine.NotWaiting):
        if "confirmed" in english:
            return _(
                "This entry has not confirmed its email yet: open the link in the email we sent."
            )
        return _("You are not waiting in this line (any more).")
    if isinstance(error, engine.DrawPending):
        return _("Nobody is let in before the lottery's draw.")
    if isinstance(error, waitlist.NotAWaitlist):
        return _("This room is not a waitlist: join it on its page instead.")
    if isinstance(error, waitlist.EmailRefused):
        if error.reason == "disposable":
            return _("Please sign up with a lasting email address, not a disposable one.")
        if error.reason == "busy":
            return _(
                "This email address has been sent enough emails for now: please try again "
                "in an hour."
            )
        return _("That email address is not valid: please check it for typos.")
    if isinstance(error, engine.InvalidInput):
        if english.startswith("name must"):
            return _("A name can be at most %(count)s characters.", count=MAX_DISPLAY_NAME)
        return _("Something in this request did not add up, so nothing was changed.")
    return english  # the admin's refusals (settings conflicts, draws): the panel is English


MINUTES_UP_TO = 3 * 3600  # a range starting under an hour is said in minutes up to this


def trend_words(trend: str | None) -> str | None:
    """Why the estimate moved, when the line's pace did: a growing figure reads as news,
    not as a broken clock."""
    if trend == "slower":
        return _("The line has slowed down, so the wait is longer than we said before.")
    if trend == "faster":
        return _("The line has sped up.")
    return None


def wait_words(guess: Estimate | None, room_status: str = "open", poor: bool = False) -> str:
    """The estimated wait as a range in plain words: "about 3 to 5 minutes", "about 20 to
    80 minutes" (a range that starts under an hour, not "1 to 2 hours"). (The
    waiting page says "paused" and "no estimate yet" itself, in its own words.) With
    ``poor`` (the room's estimates have been off lately: ``estimate.poor_record``) the
    range is wider and says "roughly"."""
    if room_status == "paused":
        return _("nobody is let in while the room is paused")
    if guess is None:
        return _("no estimate yet")
    low, high = guess.range
    if poor:
        low, high = low / WIDER, high * WIDER
    if high < 60:
        return _("less than a minute")
    if high < 120:
        return _("about a minute or two")
    if high < 3600 or (low < 3600 and high < MINUTES_UP_TO):  # (hours would overstate low)
        low_m, high_m = max(math.floor(low / 60), 1), math.ceil(high / 60)
        if high_m > low_m and poor:
            return ngettext(
                "roughly %(low)s to %(num)s minute", "roughly %(low)s to %(num)s minutes",
                high_m, low=low_m,
            )  # fmt: skip
        if high_m > low_m:
            return ngettext(
                "about %(low)s to %(num)s minute", "about %(low)s to %(num)s minutes", high_m,
                low=low_m,
            )  # fmt: skip
        return _("about %(duration)s", duration=duration(low_m * 60))
    low_h, high_h = max(math.floor(low / 3600), 1), math.ceil(high / 3600)
    if high_h > low_h and poor:
        return ngettext(
            "roughly %(low)s to %(num)s hour", "roughly %(low)s to %(num)s hours", high_h, low=low_h
        )
    if high_h > low_h:
        return ngettext(
            "about %(low)s to %(num)s hour", "about %(low)s to %(num)s hours", high_h, low=low_h
        )
    return _("about %(duration)s", duration=duration(low_h * 3600))


def progress_words(start: int, position: int) -> str:
    """How far a place has come since it joined ``start``-th (now ``position``-th)."""
    if start > position:
        return ngettext(
            "You have moved up %(moved)s of the %(num)s place that was ahead of you when you "
            "joined.",
            "You have moved up %(moved)s of the %(num)s places that were ahead of you when you "
            "joined.",
            start - 1,
            moved=start - position,
        )
    return ngettext(
        "%(num)s person was ahead of you when you joined; nobody has gone in yet.",
        "%(num)s people were ahead of you when you joined; nobody has gone in yet.",
        start - 1,
    )


def moved_words(position: int, ahead: int) -> str:
    """What a screen reader hears when the place moved."""
    if ahead:
        return _(
            "You are now number %(position)s in line, %(ahead)s ahead of you.",
            position=position,
            ahead=ahead,
        )
    return _("You are now number %(position)s in line.", position=position)


def stock_words(left: int) -> str:
    """A drop's stock on the waiting page."""
    return ngettext("%(num)s item left.", "%(num)s items left.", left)


def resent_words(resent: waitlist.Resent, address: str, corrected: bool) -> str:
    """What became of "send the confirmation email again" (or to a corrected address)."""
    if resent.sent and corrected:
        return _(
            "We sent a new confirmation email to %(email)s. The link in any earlier one "
            "no longer works.",
            email=address,
        )
    if resent.sent:
        return _("We sent the confirmation email again, to %(email)s.", email=address)
    if resent.outcome == "too_soon":
        return _(
            "We sent one only a moment ago: it can take a few minutes to arrive. You can "
            "ask again in %(wait)s.",
            wait=duration(max(resent.wait, 1)),
        )
    if resent.outcome == "too_many":
        return _(
            "We have sent this entry all the confirmation emails we send. If none arrived, "
            "look in your spam folder, or ask the organisers."
        )
    if resent.outcome == "taken":
        return _("That address is already on this waitlist, with an entry of its own.")
    if resent.outcome == "confirmed":
        return _("Your email is confirmed already: nothing more to do.")
    return _("This entry is no longer waiting, so no email was sent.")


def duration(seconds: int) -> str:
    """ "5 minutes", "5 Minuten", "5 minutos": Babel, in the visitor's language."""
    return str(format_timedelta(seconds, threshold=1, locale=page_locale()))


def chance_words(chance: SeatChance | None, joining: bool = False) -> str | None:
    """Random order's figure in words: "Your chance of a seat in the next 5 minutes:
    about 20%." (below 1%: "less than 1%"; at 100%: "very likely"); ``joining``: as a
    newcomer is told it on the room's page ("If you join now, ...")."""
    if chance is None:
        return None
    minutes = max(round(chance.within / 60), 1)
    locale = page_locale()
    percent = format_percent(round(chance.chance, 2), locale=locale)
    if joining:
        return ngettext(
            "If you join now, your chance of a seat in the next %(num)s minute is about "
            "%(percent)s.",
            "If you join now, your chance of a seat in the next %(num)s minutes is about "
            "%(percent)s.",
            minutes,
            percent=percent if chance.chance >= 0.01 else format_percent(0.01, locale=locale),
        )
    if chance.chance >= 0.995:
        return ngettext(
            "You are very likely to get a seat within the next %(num)s minute.",
            "You are very likely to get a seat within the next %(num)s minutes.",
            minutes,
        )
    if chance.chance < 0.01:
        return ngettext(
            "Your chance of a seat in the next %(num)s minute: less than 1%%.",
            "Your chance of a seat in the next %(num)s minutes: less than 1%%.",
            minutes,
        )
    return ngettext(
        "Your chance of a seat in the next %(num)s minute: about %(percent)s.",
        "Your chance of a seat in the next %(num)s minutes: about %(percent)s.",
        minutes,
        percent=percent,
    )
