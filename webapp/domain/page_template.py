"""An operator's own waiting page (issue 30): the room setting ``page_template``, a
Mustache template (rendered by chevron) of the waiting page's body, with Cloudflare
Waiting Room's variable names, so a template written for Cloudflare renders here
unchanged, and ours beside them (``VARIABLES``). No Flask here.

Mustache is logic-less: a template shows figures and words, nothing else. What it
renders is cleaned by an HTML sanitizer (nh3, the Ammonia crate) before it reaches a
page: no script, no event handler, no htmx or data attribute, no form survives, so a
template's scripts never run (the Content-Security-Policy forbids them a second time),
and the markup always comes out balanced (a stray end tag cannot close the page's own
elements). Styles (a ``<style>`` element, ``style`` attributes) and images stay.

A template is checked when it is saved (``problem``): its size, its syntax, and every
tag names a variable of ours (a typo, a partial or a dotted name is refused, saying
where), so a saved template always renders."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

import chevron
import nh3
from chevron.tokenizer import ChevronError, tokenize

MAX_BYTES = 64 * 1024  # a template's size in UTF-8
# Its tags (variables, sections): each costs a few microseconds at every render, and a
# waiting page renders at every check-in; Cloudflare's own template has about twenty
MAX_TAGS = 1000
Value = str | int | bool


class Variable(NamedTuple):
    name: str
    holds: str  # what it holds, in words (the panel's list and docs/templates.md)
    cloudflare: bool  # one of Cloudflare Waiting Room's names


def _cf(name: str, holds: str) -> Variable:
    return Variable(name, holds, True)


def _ours(name: str, holds: str) -> Variable:
    return Variable(name, holds, False)


VARIABLES: tuple[Variable, ...] = (
    _cf("waitTimeKnown", "True when there is a wait estimate (false while the room is "
        "paused, or too few visits have finished to tell)."),
    _cf("waitTime", "The estimated wait in whole minutes (0 when unknown)."),
    _cf("waitTimeHours", "The whole hours of waitTime."),
    _cf("waitTimeHourMinutes", "The minutes of waitTime past its whole hours."),
    _cf("waitTimeFormatted", "The estimated wait in words, in the visitor's language "
        "(\"about 3 to 5 minutes\"), or \"unavailable\"."),
    _cf("waitTime25Percentile", "Minutes: a quarter of waits like this one are shorter."),
    _cf("waitTime50Percentile", "Minutes: half of waits like this one are shorter."),
    _cf("waitTime75Percentile", "Minutes: three quarters of waits like this one are "
        "shorter."),
    _cf("queueIsFull", "True when the line is at its longest (Longest line): nobody new "
        "can join."),
    _cf("queueAll", "True while the room is paused: everyone waits, nobody is let in."),
    _cf("lastUpdated", "When these figures were read, ISO 8601 in UTC."),
    _cf("refreshIntervalSeconds", "Seconds until the page checks in and refreshes the "
        "figures again."),
    _cf("queueingMethod", "How the line is served: fifo (first come, first served)."),
    _cf("isFIFOQueue", "True when the line is first come, first served."),
    _cf("isRandomQueue", "True when free seats go to people drawn at random."),
    _cf("isPassthroughQueue", "True when everyone is let in at once."),
    _cf("isRejectQueue", "True when new joiners are turned away."),
    _cf("inWaitingRoom", "Always true on the waiting page."),
    _cf("isEventActive", "True during a scheduled drop: from its pre-queue (or start) "
        "until its end."),
    _cf("isEventPrequeueing", "True while the drop's pre-queue is open and the sale has "
        "not started."),
    _cf("timeUntilEventStart", "Whole minutes until the drop starts (0 when not "
        "pre-queueing)."),
    _cf("timeUntilEventStartFormatted", "The same in words, or \"unavailable\"."),
    _cf("timeUntilEventEnd", "Whole minutes until the drop ends (0 without an end)."),
    _cf("timeUntilEventEndFormatted", "The same in words, or \"unavailable\"."),
    _cf("eventStartTime", "When the drop starts, ISO 8601 in UTC (empty: no start)."),
    _cf("eventEndTime", "When the drop ends, ISO 8601 in UTC (empty: no end)."),
    _cf("shuffleAtEventStart", "True when the pre-queue is put in line by a draw at the "
        "start."),
    _cf("locale", "The visitor's language (\"en\", \"de\", \"es\" ...)."),
    _ours("position", "The visitor's place in line (1: next in; 0 in a pre-queue)."),
    _ours("ahead", "How many people are ahead of the visitor."),
    _ours("lineLength", "How many people wait in the line."),
    _ours("stockLeft", "Items left to sell, when the room tracks stock (empty if not)."),
    _ours("likelySoldOut", "True when the people ahead are likely to buy all the stock."),
    _ours("drawCommitment", "The SHA-256 the drop's draw is committed to, so anyone can "
        "check it afterwards (empty without a draw)."),
    _ours("supportCode", "The visitor's support code, to quote when asking for help."),
    _ours("roomTitle", "The room's title."),
    _ours("nextUrl", "The page of the site the visitor came from and goes to when let "
        "in (empty for a chat room)."),
    _ours("controls", "The page's controls (leave the line, move to another device, the "
        "email offer, the language): write {{{controls}}} where they go; without it "
        "they come below the template."),
)  # fmt: skip
NAMES = frozenset(v.name for v in VARIABLES)
CONTROLS = "controls"

# Sanitizing what a template renders: Ammonia's safe defaults, plus the page-building
# elements and attributes a waiting page's design uses. <script> goes with its content;
# any tag not allowed goes and keeps its content (so Cloudflare's <noscript> fallback
# text shows: scripts never run here), and so do <html>, <head> and <body> of a template
# written as a whole document.
_TAGS = set(nh3.ALLOWED_TAGS) | {
    "main", "section", "style", "picture", "source", "progress", "meter",
    "figure", "figcaption", "address", "small", "label",
}  # fmt: skip
_ATTRIBUTES = {
    **{tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()},
    "*": {"class", "id", "style", "lang", "dir", "role", "title", "hidden", "translate"},
    "a": {"href", "hreflang", "target"},
    "img": {"src", "srcset", "sizes", "alt", "width", "height", "loading", "decoding"},
    "source": {"srcset", "sizes", "media", "type", "width", "height"},
    "progress": {"value", "max"},
    "meter": {"value", "min", "max", "low", "high", "optimum"},
    "time": {"datetime"},
    "details": {"open"},
    "ol": {"start", "reversed", "type"},
    "li": {"value"},
}
_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags={"script", "title"},
    attributes=_ATTRIBUTES,
    generic_attribute_prefixes={"aria-"},
    url_schemes={"http", "https", "mailto", "tel"},
    strip_comments=True,
)
_TAG = re.compile(r"\{\{(\{)?(.*?)(?(1)\}\}\}|\}\})", re.S)


def problem(template: str) -> str | None:
    """What is wrong with a template, in words that say where (None: nothing): over
    64 KB or 1,000 tags, a tag that does not close, a section closed out of order or never, a
    partial, a name that is not one of ``VARIABLES``."""
    size = len(template.encode())
    if size > MAX_BYTES:
        return f"must be at most {MAX_BYTES:,} bytes (64 KB); this one is {size:,}"
    if "{{=" not in template:  # our own scan knows where; with other delimiters it cannot
        found = _scan(template)
        if found:
            return found
    try:
        tokens = _tokens(template)
    except ChevronError as error:
        return "does not parse: " + " ".join(str(error).split())
    tags = sum(1 for kind, _ in tokens if kind not in ("literal", "comment", "set delimiter"))
    if tags > MAX_TAGS:
        return f"has {tags:,} tags; at most {MAX_TAGS:,} are allowed"
    for kind, key in tokens:
        if kind == "partial":
            return f"uses a partial ({{{{> {key}}}}}): partials are not supported"
        if kind in ("literal", "comment", "set delimiter"):
            continue
        if key != "." and key not in NAMES:
            return f"uses {{{{{key}}}}}, which is not a variable here"
    return None


def _scan(template: str) -> str | None:
    """The first problem found by reading the tags with their positions."""
    opened: list[tuple[str, int]] = []
    end = 0
    for tag in _TAG.finditer(template):
        if "{{" in template[end : tag.start()]:
            return f"has a {{{{ that is not closed, at {where(template, template.index('{{', end))}"
        end = tag.end()
        text = tag.group(2).strip()
        if tag.group(1):
            kind, name = "{", text
        elif text and text[0] in "#^/>&!":
            kind, name = text[0], text[1:].strip()
        else:
            kind, name = "", text
        if kind == "!":
            continue
        at = where(template, tag.start())
        if kind == ">":
            return f"uses a partial ({{{{> {name}}}}}) at {at}: partials are not supported"
        if name != "." and name not in NAMES:
            return f"uses {{{{{name}}}}} at {at}, which is not a variable here"
        if kind in ("#", "^"):
            opened.append((name, tag.start()))
        elif kind == "/":
            if not opened:
                return f"closes the section {name} at {at}, which was not opened"
            last, start = opened.pop()
            if last != name:
                return (
                    f"closes the section {name} at {at}, but the section open there is "
                    f"{last} (opened at {where(template, start)})"
                )
    if "{{" in template[end:]:
        return f"has a {{{{ that is not closed, at {where(template, template.index('{{', end))}"
    if opened:
        name, start = opened[-1]
        return f"opens the section {name} at {where(template, start)} and never closes it"
    return None


def where(text: str, offset: int) -> str:
    """ "line 3, column 14" (both from 1) of a character's offset."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


@lru_cache(maxsize=32)
def _tokens(template: str) -> tuple[tuple[str, str], ...]:
    """The template's tokens, read once per template (a render from them is cheap; the
    tokenizer is not): every unescaped tag but {{{controls}}} escaped, partials gone."""
    out = []
    for kind, key in tokenize(template):
        if kind == "no escape" and key != CONTROLS:
            kind = "variable"  # only our controls are HTML; every figure is text
        out.append((kind, key))
    return tuple(out)


class Rendered(NamedTuple):
    html: str  # the cleaned body, with the controls where the template put them
    placed: bool  # the controls are in it (else the page puts them below)


def names_controls(template: str) -> bool:
    """Whether the template places the controls itself ({{{controls}}} or {{&controls}})."""
    return any(kind == "no escape" and key == CONTROLS for kind, key in _safe_tokens(template))


def _safe_tokens(template: str) -> Sequence[tuple[str, str]]:
    try:
        return _tokens(template)
    except ChevronError:
        return ()


def render(template: str, values: Mapping[str, Value], controls: str = "") -> Rendered:
    """The template with these figures, cleaned; ``controls`` (the page's own HTML)
    where the template says, once. A template that names the controls but leaves them
    out of this render (inside a section not shown) gets them at its end."""
    marker = f'<span id="wr-controls-{secrets.token_hex(8)}"></span>'
    data = {name: values.get(name, "") for name in NAMES}
    data[CONTROLS] = marker
    tokens = [t for t in _safe_tokens(template) if t[0] != "partial"]
    html = _CLEANER.clean(chevron.render(tokens, data, partials_path=None))
    if not names_controls(template):
        return Rendered(html.replace(marker, ""), False)
    if marker not in html:  # left out of this render, or written inside an attribute
        return Rendered(html + controls, True)
    return Rendered(html.replace(marker, controls, 1).replace(marker, ""), True)


def clean(html: str) -> str:
    """HTML as a template's output is cleaned (for tests and the panel's preview)."""
    return _CLEANER.clean(html)
