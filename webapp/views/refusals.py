"""The engine's refusals in the visitor's words and language (errors, forms, the room
socket). The JSON API keeps the engine's own English (``str(error)``)."""

from __future__ import annotations

from webapp.domain import rooms as engine
from webapp.domain import waitlist
from webapp.domain.rooms import MAX_DISPLAY_NAME
from webapp.i18n import _, gone_reason


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
        return _("That email address is not valid: please check it for typos.")
    if isinstance(error, engine.InvalidInput):
        if english.startswith("name must"):
            return _("A name can be at most %(count)s characters.", count=MAX_DISPLAY_NAME)
        return _("Something in this request did not add up, so nothing was changed.")
    return english  # the admin's refusals (settings conflicts, draws): the panel is English
