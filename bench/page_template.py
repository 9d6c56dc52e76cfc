"""What a room's page template costs per render (webapp/domain/page_template.py): the
Cloudflare-style test template and the same grown to about 16 KB and to the 64 KB
limit, each rendered and sanitized as a waiting page's poll does, against the
tokenizer's cost that the per-process cache saves. Prints milliseconds per render;
takes a few seconds."""

from __future__ import annotations

import time
from pathlib import Path

from chevron.tokenizer import tokenize

from webapp.domain import page_template

BASE = (Path(__file__).parents[1] / "tests" / "pages" / "cloudflare_style.html").read_text()
FIGURES: dict[str, page_template.Value] = {"waitTimeKnown": True, "waitTime": 12,
    "waitTimeFormatted": "about 10 to 14 minutes", "position": 42, "ahead": 41,
    "lineLength": 180, "roomTitle": "Acme", "supportCode": "K7Q2XM"}  # fmt: skip
CONTROLS = '<div id="page-controls"><a href="/leave">Leave</a></div>'


def grown(size: int, dense: bool = False) -> str:
    """The base template with paragraphs added up to ``size`` bytes: words and markup
    with a figure in each (a page's usual make-up), or ``dense``: little but figures,
    up to the most tags a template may have (MAX_TAGS)."""
    words = "Thank you for waiting: the sale is busy and everyone is served in turn. " * 4
    filler = f'<p class="note">{words}{{{{position}}}}</p>\n'
    if dense:
        filler = "<b>{{position}}</b>{{ahead}}"
    text = BASE.replace("{{{controls}}}", "{{{controls}}}\n" + filler * 5000)
    cut = text.encode()[: size - 200].decode(errors="ignore")
    if dense:
        cut = BASE.replace("{{{controls}}}", "{{{controls}}}" + filler * 480)
    return cut.rsplit("<p", 1)[0] + "</div>" if not dense else cut


def per_render(template: str, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        page_template.render(template, FIGURES, CONTROLS)
    return (time.perf_counter() - start) / runs * 1000


def main() -> None:
    print(f"{'template':>10} {'bytes':>7} {'render ms':>10} {'tokenize ms':>12}")
    cases = (("base", BASE), ("16 KB", grown(16_384)), ("64 KB", grown(65_536)),
             ("dense", grown(65_536, dense=True)))  # fmt: skip
    for label, template in cases:
        assert page_template.problem(template) is None, label
        per_render(template, 3)  # the cache filled
        started = time.perf_counter()
        list(tokenize(template))
        tokenizing = (time.perf_counter() - started) * 1000
        runs = 200 if len(template) < 20_000 else 40
        size = len(template.encode())
        print(f"{label:>10} {size:>7} {per_render(template, runs):>10.2f} {tokenizing:>12.2f}")


if __name__ == "__main__":
    main()
